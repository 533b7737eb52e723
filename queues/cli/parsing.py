"""The command line's values, checked before anything is read or written: each bad value is
a `CommandError` that names it (never a traceback, and nothing changed).
See docs/design/cli.md."""

from __future__ import annotations

import argparse
import re
from datetime import timedelta
from uuid import UUID

from django.core.management.base import CommandError

from queues.enums import TERMINAL_STATUSES, JobStatus
from queues.exceptions import InvalidJob, QueueError
from queues.tags import check_tag
from queues.validation import parse_job_id, validate_queue_name

_UNITS = {"w": "weeks", "d": "days", "h": "hours", "m": "minutes", "s": "seconds"}
_PART = re.compile(r"(\d+)([wdhms])")
_DURATION = re.compile(r"(?:\d+[wdhms])+")
#: Long enough for any retention; keeps `now - duration` inside datetime's range.
MAX_DURATION = timedelta(days=365 * 100)
#: Spellings of statuses: the stored one in any case, and snake case ("timed_out").
_STATUSES = {s.lower(): JobStatus(s) for s in JobStatus.values} | {"timed_out": JobStatus.TIMED_OUT}


def duration(text: str, option: str) -> timedelta:
    """`30d`, `12h`, `90m`, `45s`, `2w`, or a sum of them (`1d12h`); above zero."""
    value = str(text).strip().lower()
    if not _DURATION.fullmatch(value):
        raise CommandError(
            f"{option}: {text!r} is not a duration; write it as 30d, 12h, 90m, 45s, 2w or 1d12h"
        )
    total = timedelta()
    for amount, unit in _PART.findall(value):
        if len(amount) > 9:
            raise CommandError(f"{option}: {text!r} is too long a duration")
        try:
            total += timedelta(**{_UNITS[unit]: int(amount)})
        except OverflowError:  # beyond timedelta's 999,999,999 days
            raise CommandError(f"{option}: {text!r} is longer than 100 years") from None
    if total <= timedelta(0):
        raise CommandError(f"{option}: {text!r} must be longer than zero")
    if total > MAX_DURATION:
        raise CommandError(f"{option}: {text!r} is longer than 100 years")
    return total


def statuses(values: list[str] | None, *, finished_only: bool = False) -> list[str]:
    """Statuses given as `--status A --status B` or `--status A,B`, in any case."""
    found: list[str] = []
    for value in values or []:
        for name in str(value).split(","):
            status = _STATUSES.get(name.strip().lower())
            if status is None:
                known = ", ".join(JobStatus.values)
                raise CommandError(f"--status: unknown status {name.strip()!r} (one of {known})")
            if finished_only and status not in TERMINAL_STATUSES:
                finished = ", ".join(sorted(TERMINAL_STATUSES))
                raise CommandError(
                    f"--status: {status} jobs have not finished; purge takes {finished}"
                )
            if status not in found:
                found.append(status)
    return found


def queue_name_argument(text: str) -> str:
    """An argparse `type` for a queue name (runworker's, `hammerweb health --queue`): the
    engine's refusal as argparse's usage error."""
    try:
        return validate_queue_name(text)
    except QueueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def queue_name(value: str | None, option: str = "--queue") -> str | None:
    if value is None:
        return None
    try:
        return validate_queue_name(value)
    except InvalidJob as exc:
        raise CommandError(f"{option}: {value!r}: {exc}") from exc


def tag(value: str | None) -> str | None:
    if value is None:
        return None
    try:
        return check_tag(value)
    except InvalidJob as exc:
        raise CommandError(f"--tag: {exc}") from exc


def job_ids(values: list[str]) -> list[UUID]:
    """Job ids, each checked (all before any is used), without repeats, in the given order."""
    ids: list[UUID] = []
    for value in values:
        try:
            job_id = parse_job_id(value)
        except InvalidJob as exc:
            raise CommandError(f"{value!r} is not a job id") from exc
        if job_id not in ids:
            ids.append(job_id)
    return ids


def positive(value: int | None, option: str, limit: int) -> int | None:
    if value is not None and not 1 <= value <= limit:
        raise CommandError(f"{option} must be between 1 and {limit:,}, not {value}")
    return value
