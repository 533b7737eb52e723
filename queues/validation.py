"""Checks of what callers hand the queue, before anything is written: new jobs (validated and
normalised), queue names, ids, leases and retry times. Each failure is a typed `InvalidJob`
(or a `ValueError`); nothing is written."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from datetime import datetime, timedelta
from uuid import UUID

from django.utils import timezone

from .cron import CronSchedule
from .enums import JobPriority, JobStatus
from .exceptions import (
    InvalidCronSchedule,
    InvalidJob,
    InvalidPayload,
    InvalidPriority,
    InvalidQueueName,
    InvalidWorkflow,
)
from .models import MAX_QUEUE_NAME_LENGTH, Job
from .retry import RetryStrategy

#: A payload larger than this is refused: a queue is not a blob store.
MAX_PAYLOAD_BYTES = 1024 * 1024


def validate_queue_name(name: object) -> str:
    if not isinstance(name, str) or not name.strip():
        raise InvalidQueueName("a queue name must be a non-empty string")
    if len(name) > MAX_QUEUE_NAME_LENGTH:
        raise InvalidQueueName(
            f"queue name is {len(name)} characters long; the limit is {MAX_QUEUE_NAME_LENGTH}"
        )
    if any(ord(c) < 32 for c in name):
        raise InvalidQueueName("a queue name must not contain control characters")
    return name


def check_json(value: object, what: str) -> None:
    try:
        text = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidPayload(f"{what} is not JSON-serialisable: {exc}") from exc
    if len(text.encode()) > MAX_PAYLOAD_BYTES:
        raise InvalidPayload(f"{what} is larger than {MAX_PAYLOAD_BYTES} bytes")
    if "\x00" in text.replace("\\u0000", "\x00"):
        # PostgreSQL's jsonb cannot store NUL characters.
        raise InvalidPayload(f"{what} contains a NUL character")


def _check_aware(value, name: str) -> None:
    if value is not None and timezone.is_naive(value):
        raise InvalidJob(f"{name} must be a timezone-aware datetime")


def normalize_id(value: object) -> str:
    try:
        return str(value if isinstance(value, UUID) else UUID(str(value)))
    except (ValueError, TypeError, AttributeError) as exc:
        raise InvalidWorkflow(f"{value!r} is not a job id") from exc


def parse_job_id(value) -> UUID:
    try:
        return UUID(normalize_id(value))
    except InvalidWorkflow as exc:
        raise InvalidJob(f"{value!r} is not a job id") from exc


def positive_lease(lease: timedelta) -> timedelta:
    if not isinstance(lease, timedelta) or lease <= timedelta(0):
        raise ValueError("a lease must be a positive timedelta")
    return lease


def check_retry_time(at: datetime | None) -> None:
    if at is not None and (not isinstance(at, datetime) or at.tzinfo is None):
        raise InvalidJob("retry time must be a timezone-aware datetime")


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
            job.scheduled_at = now + (job.scheduled_at - job.created_at)
        validate_job(job, now)
        job.created_at = now
    ids = [job.id for job in jobs]
    if len(set(ids)) != len(ids):
        raise InvalidJob("the same job was given twice")


def validate_job(job, now) -> None:
    """Validate and normalise `job` in place (before enqueue)."""
    validate_queue_name(job.queue_name)
    check_json(job.payload, "payload")
    priority = job.priority
    if isinstance(priority, bool) or priority not in set(JobPriority):
        raise InvalidPriority(f"unknown priority: {priority!r} (use JobPriority)")
    job.priority = JobPriority(priority)
    for name in ("max_attempts", "attempts"):
        value = getattr(job, name)
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidJob(f"{name} must be a whole number")
    if job.max_attempts < 1:
        raise InvalidJob("max_attempts must be at least 1")
    if job.attempts < 0:
        raise InvalidJob("attempts must not be negative")
    if job.status != JobStatus.PENDING:
        raise InvalidJob("a new job must be Pending")
    for name in ("scheduled_at", "next_run_at"):
        _check_aware(getattr(job, name), name)
    if job.timeout is not None and (
        not isinstance(job.timeout, timedelta) or job.timeout <= timedelta(0)
    ):
        raise InvalidJob("timeout must be a positive timedelta or None")
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
    job.depends_on = [normalize_id(i) for i in (job.depends_on or [])]
    if len(set(job.depends_on)) != len(job.depends_on):
        job.depends_on = list(dict.fromkeys(job.depends_on))
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
    if not math.isfinite(job.scheduled_at.timestamp()):
        raise InvalidJob("scheduled_at is out of range")
