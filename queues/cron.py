"""Cron schedules for recurring jobs, evaluated in a time zone: 6 fields with seconds first
(Hammerwork's form) or the usual 5, Sunday 0 or 7 as in cron. Daylight-saving time follows
Vixie cron's rule, and missed occurrences coalesce into one catch-up run.
See docs/design/schedules.md."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterBadCronError, CroniterError, croniter

from queues.exceptions import InvalidCronSchedule

MAX_EXPRESSION_LENGTH = 100


def _zone(name: str) -> ZoneInfo:
    if not isinstance(name, str) or not name or len(name) > 64:
        raise InvalidCronSchedule(f"invalid time zone: {name!r}")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise InvalidCronSchedule(f"unknown time zone: {name!r}") from exc


@dataclass(frozen=True)
class CronSchedule:
    expression: str
    timezone: str = "UTC"
    _fields: tuple[str, ...] = field(init=False, repr=False, compare=False)
    _zone: ZoneInfo = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        expression = self.expression
        if not isinstance(expression, str) or not expression.strip():
            raise InvalidCronSchedule("a cron expression must be a non-empty string")
        if len(expression) > MAX_EXPRESSION_LENGTH:
            raise InvalidCronSchedule(
                f"cron expression longer than {MAX_EXPRESSION_LENGTH} characters"
            )
        fields = tuple(expression.split())
        if len(fields) not in (5, 6):
            raise InvalidCronSchedule(
                f"cron expression {expression!r} has {len(fields)} fields; expected 6 "
                "(seconds first) or 5"
            )
        if not croniter.is_valid(" ".join(fields), second_at_beginning=len(fields) == 6):
            raise InvalidCronSchedule(f"invalid cron expression: {expression!r}")
        object.__setattr__(self, "_fields", fields)
        object.__setattr__(self, "_zone", _zone(self.timezone))

    @property
    def has_seconds(self) -> bool:
        return len(self._fields) == 6

    @property
    def _hour_is_wildcard(self) -> bool:
        hour = self._fields[2] if self.has_seconds else self._fields[1]
        return hour.startswith("*")

    def _iter(self, start: datetime) -> croniter:
        return croniter(
            " ".join(self._fields),
            start.astimezone(self._zone),
            second_at_beginning=self.has_seconds,
        )

    def next_after(self, dt: datetime) -> datetime:
        """The first occurrence strictly after `dt`, in UTC."""
        if dt.tzinfo is None:
            raise ValueError("next_after needs an aware datetime")
        local_start = dt.astimezone(self._zone)
        try:
            it = self._iter(dt)
            for _ in range(4):
                candidate = it.get_next(datetime)
                # A fixed-time occurrence repeated by a fall-back runs once.
                if self._hour_is_wildcard or candidate.replace(tzinfo=None) > local_start.replace(
                    tzinfo=None
                ):
                    return candidate.astimezone(UTC)
            return candidate.astimezone(UTC)
        except (CroniterError, CroniterBadCronError) as exc:  # pragma: no cover - validated
            raise InvalidCronSchedule(str(exc)) from exc

    def latest_at_or_before(self, dt: datetime) -> datetime:
        """The last occurrence at or before `dt`, in UTC."""
        probe = self._iter(dt).get_prev(datetime).astimezone(UTC)
        following = self.next_after(probe)
        return following if following <= dt else probe

    def next_run(self, slot: datetime | None, now: datetime) -> datetime:
        """When a recurring job runs next, after the run for `slot` at `now`.

        Missed occurrences (the worker was down) are coalesced into one catch-up run: if an
        occurrence after `slot` has already passed, the latest such occurrence runs now.
        """
        if slot is None:
            return self.next_after(now)
        following = self.next_after(slot)
        if following > now:
            return following
        return max(following, self.latest_at_or_before(now))
