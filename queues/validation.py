"""Checks of what callers hand the queue, before anything is written: new jobs (validated and
normalised), queue names, ids, leases and retry times. Each failure is a typed `InvalidJob`
(or a `ValueError`). The limits are those every supported database can hold, so that a job
TestQueue or SQLite accepts, PostgreSQL and MariaDB accept too. See docs/design/vocabulary.md."""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from uuid import UUID

from django.utils import timezone

from queues.cron import CronSchedule
from queues.enums import JobPriority, JobStatus
from queues.exceptions import (
    InvalidCronSchedule,
    InvalidJob,
    InvalidPayload,
    InvalidPriority,
    InvalidQueueName,
    InvalidTags,
    InvalidWorkflow,
)
from queues.models import MAX_QUEUE_NAME_LENGTH, Job
from queues.retry import RetryStrategy
from queues.tags import check_tags
from queues.text import MAX_LABEL, storable, unstorable

#: A payload larger than this is refused: a queue is not a blob store.
MAX_PAYLOAD_BYTES = 1024 * 1024
#: The deepest nesting of arrays and objects in a payload or result (MariaDB refuses 32).
MAX_JSON_NESTING = 31
#: The largest `attempts` or `max_attempts` (PostgreSQL's integer column).
MAX_ATTEMPTS = 2**31 - 1
#: `check_json`'s encoder, made once: `json.dumps` with options builds a new one each call,
#: which was a third of the check of a small result.
_ENCODER = json.JSONEncoder(allow_nan=False, ensure_ascii=False)
#: The longest timeout or lease: past it a job is better without one, and beyond it the
#: worker's waits overflow.
MAX_DURATION = timedelta(days=365)

#: Characters a queue name must not hold: control and format characters, unpaired
#: surrogates, line and paragraph separators (what cannot be stored, or shows as nothing).
_HIDDEN_CATEGORIES = {"Cc", "Cf", "Cs", "Zl", "Zp"}
#: A "\u0000" escape in JSON text, after an even number of backslashes (an escaped
#: backslash followed by "u0000" is not one).
_NUL_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")


def validate_queue_name(name: object) -> str:
    """A queue name is 1 to 255 characters, with no control or format characters and no
    whitespace at either end. MariaDB compares names ignoring trailing spaces (PAD SPACE)
    and, in its default collations, NUL and other ignorable characters: such names would
    reach another queue there."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidQueueName("a queue name must be a non-empty string")
    if len(name) > MAX_QUEUE_NAME_LENGTH:
        raise InvalidQueueName(
            f"queue name is {len(name)} characters long; the limit is {MAX_QUEUE_NAME_LENGTH}"
        )
    if name != name.strip():
        raise InvalidQueueName("a queue name must not begin or end with whitespace")
    # Printable ASCII holds none of the hidden categories: most names need no lookup.
    if not (name.isascii() and name.isprintable()) and any(
        unicodedata.category(c) in _HIDDEN_CATEGORIES for c in name
    ):
        raise InvalidQueueName(
            "a queue name must not contain control or format characters or unpaired surrogates"
        )
    return name


def validate_label(value: object, what: str, error: type[InvalidJob]) -> str:
    """A name of a batch or workflow: a non-blank string of at most 255 storable characters."""
    if not isinstance(value, str) or not value.strip():
        raise error(f"{what} must be a non-empty string")
    if len(value) > MAX_LABEL:
        raise error(f"{what} is {len(value)} characters long; the limit is {MAX_LABEL}")
    problem = unstorable(value)
    if problem:
        raise error(f"{what} contains {problem}")
    return value


#: Where `validate_job` leaves the payload's JSON text for the insert that follows (with
#: the payload it was made of: a payload replaced since is encoded anew); the insert takes
#: it off.
PAYLOAD_TEXT = "_hammerweb_payload_text"


class StoredJSON(str):
    """A value's JSON text as `check_json` encoded it: a write stores it as it is (see
    `queues.store.sql.store.json_text`) instead of encoding the value again."""

    __slots__ = ()


def check_json(value: object, what: str, error: type[InvalidJob] = InvalidPayload) -> str:
    """`value` can be stored in a JSON column of every database: serialisable, finite, at
    most MAX_PAYLOAD_BYTES of UTF-8, nested at most MAX_JSON_NESTING deep, with no NUL
    character and no unpaired surrogate in its strings. Returns its JSON text."""
    try:
        text = _ENCODER.encode(value)
    except RecursionError as exc:
        raise error(f"{what} is nested more than {MAX_JSON_NESTING} deep") from exc
    except Exception as exc:  # TypeError, ValueError, or whatever a strange object raises
        raise error(f"{what} is not JSON-serialisable: {exc}") from exc
    try:
        size = len(text.encode())
    except UnicodeEncodeError as exc:
        raise error(f"{what} contains an unpaired surrogate") from exc
    if size > MAX_PAYLOAD_BYTES:
        raise error(f"{what} is larger than {MAX_PAYLOAD_BYTES} bytes")
    if "\\u0000" in text and _NUL_ESCAPE.search(text):
        # PostgreSQL's jsonb cannot store NUL characters.
        raise error(f"{what} contains a NUL character")
    if text.count("[") + text.count("{") > MAX_JSON_NESTING and _nesting(value) > MAX_JSON_NESTING:
        raise error(f"{what} is nested more than {MAX_JSON_NESTING} deep")
    return text


def check_meta(meta: object) -> dict:
    """A job's meta (see `queues.tags`): a JSON object (string keys) that a JSON column of
    every database holds, within a payload's limits. None means an empty one."""
    if meta is None:
        return {}
    if type(meta) is dict and not meta:
        return meta  # most jobs': nothing to encode
    if not isinstance(meta, dict):
        raise InvalidTags(f"meta must be a dict (a JSON object), not {type(meta).__name__}")
    if not all(isinstance(key, str) for key in meta):
        raise InvalidTags("meta's keys must be strings (JSON would make them strings)")
    check_json(meta, "meta", InvalidTags)
    return meta


def _nesting(value: object) -> int:
    """How deep arrays and objects nest in `value` (0 for a scalar)."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children)
    return deepest


def check_time(value, name: str, error: type[InvalidJob] = InvalidJob) -> datetime | None:
    """`value` as an aware datetime in UTC, or None. A naive one, or one that UTC cannot
    hold (an offset east of UTC on January 1st of year 1), is refused: PostgreSQL would
    store it before year 1 and never read it back."""
    if value is None:
        return None
    if not isinstance(value, datetime) or timezone.is_naive(value):
        raise error(f"{name} must be a timezone-aware datetime")
    try:
        return value.astimezone(UTC)
    except OverflowError as exc:
        raise error(f"{name} is out of range") from exc


def check_duration(value, name: str, error: type[ValueError] = ValueError) -> timedelta:
    """A positive timedelta of at most MAX_DURATION."""
    if not isinstance(value, timedelta) or value <= timedelta(0):
        raise error(f"{name} must be a positive timedelta")
    if value > MAX_DURATION:
        raise error(f"{name} must be at most {MAX_DURATION.days} days")
    return value


def normalize_id(value: object) -> str:
    try:
        return str(value if isinstance(value, UUID) else UUID(str(value)))
    except (ValueError, TypeError, AttributeError) as exc:
        raise InvalidWorkflow(f"{value!r} is not a job id") from exc


#: The times a job may be given; each is checked (aware, within UTC's range) and kept in UTC.
_PRIORITIES = frozenset(JobPriority)
_TIME_FIELDS = [
    "scheduled_at",
    "next_run_at",
    "started_at",
    "completed_at",
    "failed_at",
    "timed_out_at",
    "lease_expires_at",
    "last_heartbeat_at",
]


def parse_job_id(value) -> UUID:
    try:
        return UUID(normalize_id(value))
    except InvalidWorkflow as exc:
        raise InvalidJob(f"{value!r} is not a job id") from exc


def positive_lease(lease: timedelta) -> timedelta:
    return check_duration(lease, "a lease")


def check_retry_time(at: datetime | None) -> None:
    check_time(at, "retry time")


def prepare_jobs(jobs: Sequence[Job], now: datetime, rebase: bool) -> None:
    """Validate and normalise new jobs in place, stamped `now`. With `rebase` (a clock that
    is not the system's), each job keeps the delay it was built with, counted from `now`."""
    if not jobs:
        return
    for job in jobs:
        if not isinstance(job, Job):
            raise InvalidJob(f"expected a Job, got {type(job).__name__}")
        if (
            rebase
            and isinstance(job.scheduled_at, datetime)
            and isinstance(job.created_at, datetime)
            and job.scheduled_at.tzinfo is not None
        ):
            # A moved clock: keep the delay the job was built with.
            try:
                job.scheduled_at = now + (job.scheduled_at - job.created_at)
            except OverflowError as exc:
                raise InvalidJob("scheduled_at is out of range") from exc
        validate_job(job, now)
        job.created_at = now
    ids = [job.id for job in jobs]
    if len(set(ids)) != len(ids):
        raise InvalidJob("the same job was given twice")


def validate_job(job, now) -> None:
    """Validate and normalise `job` in place (before enqueue)."""
    try:
        job.id = job.id if isinstance(job.id, UUID) else UUID(str(job.id))
    except ValueError as exc:
        raise InvalidJob(f"{job.id!r} is not a job id") from exc
    validate_queue_name(job.queue_name)
    if job.payload is None:
        raise InvalidPayload("payload must not be None (an empty payload is {})")
    text = check_json(job.payload, "payload")
    if text.isascii() and "\x7f" not in text:  # then it is the text Django writes, for the
        # insert (`json.dumps` escapes DEL too, which ensure_ascii=False leaves)
        job.__dict__[PAYLOAD_TEXT] = (job.payload, StoredJSON(text))
    job.tags = check_tags(job.tags)
    job.meta = check_meta(job.meta)
    priority = job.priority
    if isinstance(priority, bool) or priority not in _PRIORITIES:
        raise InvalidPriority(f"unknown priority: {priority!r} (use JobPriority)")
    if type(priority) is not JobPriority:
        job.priority = JobPriority(priority)
    for name in ("max_attempts", "attempts"):
        value = getattr(job, name)
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidJob(f"{name} must be a whole number")
        if value > MAX_ATTEMPTS:
            raise InvalidJob(f"{name} must be at most {MAX_ATTEMPTS}")
    if job.max_attempts < 1:
        raise InvalidJob("max_attempts must be at least 1")
    if job.attempts < 0:
        raise InvalidJob("attempts must not be negative")
    if job.status != JobStatus.PENDING:
        raise InvalidJob("a new job must be Pending")
    if job.run_token is not None:
        raise InvalidJob("a new job has no run token (a claim gives one)")
    for name in _TIME_FIELDS:
        value = getattr(job, name)
        if value is not None:  # most of a new job's times are
            setattr(job, name, check_time(value, name))
    if job.timeout is not None:
        check_duration(job.timeout, "timeout", InvalidJob)
    if job.error_message is not None:
        job.error_message = storable(job.error_message)
    if job.retry_strategy is not None:
        strategy = job.retry_strategy
        if isinstance(strategy, RetryStrategy):
            job.retry_strategy = strategy.to_dict()
        else:
            try:
                RetryStrategy.from_dict(strategy)
            except ValueError as exc:
                raise InvalidJob(str(exc)) from exc
    if job.result is not None:
        check_json(job.result, "result")
    if not job.depends_on:
        job.depends_on = []
    else:
        job.depends_on = list(dict.fromkeys(normalize_id(i) for i in job.depends_on))
        if str(job.id) in job.depends_on:
            raise InvalidWorkflow(f"job {job.id} depends on itself")
    if job.cron_schedule is not None and not str(job.cron_schedule).strip():
        job.cron_schedule = None  # "" means no schedule, as None does
    if job.cron_schedule:
        try:
            schedule = CronSchedule(job.cron_schedule, job.timezone or "UTC")
        except InvalidCronSchedule:
            raise
        job.timezone = schedule.timezone
        job.recurring = True
        if job.next_run_at is None:
            job.next_run_at = schedule.next_after(now)
        # A recurring job's occurrence is its next run.
        job.scheduled_at = job.next_run_at
    else:
        if job.timezone and job.timezone != "UTC":
            CronSchedule("* * * * *", job.timezone)  # validates the zone
        job.recurring = False
    if job.scheduled_at is None:
        job.scheduled_at = now
