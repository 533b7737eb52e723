"""Completions, failures and retries per queue and hour (`HourlyCount`), summed by `roll_up`
from the per-minute counters, so a week of history is a handful of rows per queue; `hourly`
reads the rolled-up hours and the minutes after them. The rule (`kind_of`): a failure is an
attempt that left the job Failed, Dead or TimedOut; a retry, one that left it Pending or
Retrying. See docs/design/counters.md."""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime, timedelta

from django.db import IntegrityError, OperationalError, transaction
from django.db.models import Sum
from django.db.models.functions import Trunc

from queues.enums import FAILURE_STATUSES, JobStatus
from queues.models import AttemptCount, CompletionCount, HourlyCount
from queues.store.counters import completions

HOUR = timedelta(hours=1)
RETRIED_STATUSES = (JobStatus.PENDING, JobStatus.RETRYING)
#: What each bucket holds, in this order.
KINDS = ("completed", "failed", "retried")
#: The statuses after an attempt that the history counts (`kind_of`).
COUNTED_STATUSES = (*sorted(FAILURE_STATUSES), *RETRIED_STATUSES)


def hour_of(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def raw_counts(
    first: datetime, end: datetime, kind: str, using: str = "default"
) -> dict[tuple[str, datetime], list[int]]:
    """{(queue, bucket start): [completed, failed, retried]} from the per-minute sources,
    of `first` (included) to `end` (excluded), in buckets of a `kind` ("minute" or "hour").
    Two aggregates of the trigger-kept counters in the database; a bucket without any is
    absent."""
    result: dict[tuple[str, datetime], list[int]] = defaultdict(lambda: [0, 0, 0])
    done = (
        CompletionCount.objects.using(using)
        .filter(minute__gte=first, minute__lt=end)
        .annotate(bucket=Trunc("minute", kind, tzinfo=UTC))
        .order_by()
        .values_list("queue_name", "bucket")
        .annotate(n=Sum("n"))
    )
    for queue, bucket, n in done:
        result[queue, bucket.astimezone(UTC)][0] += n
    ended = (
        AttemptCount.objects.using(using)
        .filter(minute__gte=first, minute__lt=end, status__in=COUNTED_STATUSES)
        .annotate(bucket=Trunc("minute", kind, tzinfo=UTC))
        .order_by()
        .values_list("queue_name", "bucket", "status")
        .annotate(n=Sum("n"))
    )
    for queue, bucket, status, n in ended:
        result[queue, bucket.astimezone(UTC)][kind_of(status)] += n
    return dict(result)


def kind_of(status: str) -> int:
    """The index in `KINDS` of an attempt after which the job is `status` (the rule of this
    module's docstring): 1, a failure; 2, a retry; ValueError for a status that is neither
    (a cancelled run)."""
    if status in FAILURE_STATUSES:
        return 1
    if status in RETRIED_STATUSES:
        return 2
    raise ValueError(f"an attempt that ended {status!r} is neither a failure nor a retry")


def roll_up(now: datetime, using: str = "default", kept: timedelta = completions.KEPT) -> int:
    """Write the `HourlyCount` rows of the closed hours whose minutes are all still kept
    (`kept`: the minutes' retention), from the newest rolled-up hour on (rolled again: it
    may have been rolled while a straggler of its last minute committed). Idempotent; two
    pruners at once write the same rows, and the one that loses the race leaves them to the
    other. Returns the rows written (0 for the loser)."""
    last_closed = hour_of(now)  # exclusive end: the open hour is not rolled
    first = hour_of(now - kept) + HOUR  # its minutes are all kept
    newest = HourlyCount.objects.using(using).filter(hour__gte=first).order_by("-hour").first()
    start = max(first, newest.hour) if newest else first
    if start >= last_closed:
        return 0
    rows = [
        HourlyCount(queue_name=queue, hour=hour, completed=c, failed=f, retried=r)
        for (queue, hour), (c, f, r) in sorted(
            raw_counts(start, last_closed, "hour", using).items()
        )
    ]
    try:
        with transaction.atomic(using=using):
            HourlyCount.objects.using(using).filter(hour__gte=start, hour__lt=last_closed).delete()
            HourlyCount.objects.using(using).bulk_create(rows)
    except (IntegrityError, OperationalError):
        # Another pruner wrote them (its rows took the unique index first), or holds them
        # (MariaDB's deadlock, SQLite's lock): its rows are the same, or the next run's are.
        return 0
    return len(rows)


def rolled_until(using: str = "default") -> datetime | None:
    """The end of the newest rolled-up hour: what comes after is read from the minutes."""
    newest = HourlyCount.objects.using(using).order_by("-hour").values_list("hour", flat=True)
    hour = newest.first()
    return None if hour is None else hour.astimezone(UTC) + HOUR


def hourly(
    first: datetime, end: datetime, using: str = "default"
) -> dict[tuple[str, datetime], list[int]]:
    """`raw_counts` by hour of `first` to `end` (starts of hours), the rolled-up hours read
    from `HourlyCount` and the rest from the minutes."""
    split = min(max(rolled_until(using) or first, first), end)
    result = raw_counts(split, end, "hour", using) if split < end else {}
    rows = HourlyCount.objects.using(using).filter(hour__gte=first, hour__lt=split)
    for row in rows.values_list("queue_name", "hour", *KINDS):
        result[row[0], row[1].astimezone(UTC)] = list(row[2:])
    return result
