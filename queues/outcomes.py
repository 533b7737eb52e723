"""What a run's outcome writes: the pure part, shared by the database queue and TestQueue."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from .cron import CronSchedule
from .enums import JobStatus
from .retry import RetryStrategy

LEASE_EXPIRED_ERROR = (
    "Job lease expired while Running; the worker is presumed dead and the job was reclaimed"
)


@dataclass(frozen=True)
class JobOutcome:
    """How a run ended. Build it with the class methods."""

    kind: str
    error: str | None = None
    result: Any = None
    retry_at: datetime | None = None

    @classmethod
    def completed(cls, result: Any = None) -> JobOutcome:
        return cls("completed", result=result)

    @classmethod
    def failed(cls, error: str) -> JobOutcome:
        """Retried with backoff while attempts remain, else Dead."""
        return cls("failed", error=str(error))

    @classmethod
    def retry(cls, retry_at: datetime, error: str | None = None) -> JobOutcome:
        """Back to Pending at `retry_at`, whatever the attempts."""
        return cls("retry", error=None if error is None else str(error), retry_at=retry_at)

    @classmethod
    def dead(cls, error: str) -> JobOutcome:
        return cls("dead", error=str(error))

    @classmethod
    def timed_out(cls, error: str = "Job timed out") -> JobOutcome:
        """Retried while attempts remain; TimedOut on the last attempt."""
        return cls("timed_out", error=str(error))

    @classmethod
    def cancelled(cls, error: str) -> JobOutcome:
        """Failed without running again (e.g. its fail-fast batch failed)."""
        return cls("cancelled", error=str(error))


@dataclass
class RecordedOutcome:
    """What `finish_job_run` wrote."""

    status: JobStatus
    next_run_at: datetime | None = None
    unblocked: list[UUID] = field(default_factory=list)
    cancelled: list[UUID] = field(default_factory=list)


@dataclass
class StaleJobRecovery:
    requeued: list[UUID] = field(default_factory=list)
    dead: list[UUID] = field(default_factory=list)


@dataclass(frozen=True)
class Plan:
    """The row's new values, and what the outcome means for the job's graph."""

    status: JobStatus
    fields: dict[str, Any]
    terminal_failure: bool  # dependents, workflows and fail-fast batches react to it
    completed: bool  # dependents may be released
    next_run_at: datetime | None = None


_RUN_CLEARED = {"run_token": None, "lease_expires_at": None}


def plan_outcome(job, outcome: JobOutcome, now: datetime, rng: random.Random | None = None) -> Plan:
    """The row values that record `outcome` for the run of `job` (which is Running)."""
    kind = outcome.kind
    attempts_left = job.attempts < job.max_attempts
    if kind == "completed":
        if job.cron_schedule and job.recurring:
            return _reschedule(job, now, error=None, completed=True)
        return Plan(
            JobStatus.COMPLETED,
            {
                **_RUN_CLEARED,
                "status": JobStatus.COMPLETED,
                "completed_at": now,
                "result": outcome.result,
            },
            terminal_failure=False,
            completed=True,
        )
    if kind in ("failed", "timed_out") and attempts_left:
        strategy = RetryStrategy.from_dict(job.retry_strategy)
        retry_at = now + strategy.delay(job.attempts, rng)
        extra = {"timed_out_at": now} if kind == "timed_out" else {}
        return _pending_again(retry_at, outcome.error, extra)
    if kind == "retry":
        return _pending_again(outcome.retry_at or now, outcome.error, {})
    # A terminal failure.
    if job.cron_schedule and job.recurring and kind != "cancelled":
        # A recurring job is not lost to one bad run: the error stays until the next run.
        return _reschedule(job, now, error=outcome.error, completed=False)
    if kind == "timed_out":
        status, stamp = JobStatus.TIMED_OUT, {"timed_out_at": now, "failed_at": now}
    elif kind == "cancelled":
        status, stamp = JobStatus.FAILED, {"failed_at": now}
    else:  # failed with no attempts left, or dead
        status, stamp = JobStatus.DEAD, {"failed_at": now}
    return Plan(
        status,
        {**_RUN_CLEARED, "status": status, "error_message": outcome.error, **stamp},
        terminal_failure=True,
        completed=False,
    )


def _pending_again(at: datetime, error: str | None, extra: dict[str, Any]) -> Plan:
    fields = {
        **_RUN_CLEARED,
        "status": JobStatus.PENDING,
        "scheduled_at": at,
        "started_at": None,
        "last_heartbeat_at": None,
        **extra,
    }
    if error is not None:
        fields["error_message"] = error
    return Plan(JobStatus.PENDING, fields, terminal_failure=False, completed=False)


def _reschedule(job, now: datetime, error: str | None, completed: bool) -> Plan:
    schedule = CronSchedule(job.cron_schedule, job.timezone or "UTC")
    slot = job.next_run_at or job.scheduled_at
    next_run = schedule.next_run(slot, now)
    fields = {
        **_RUN_CLEARED,
        "status": JobStatus.PENDING,
        "attempts": 0,
        "scheduled_at": next_run,
        "next_run_at": next_run,
        "started_at": None,
        "last_heartbeat_at": None,
        "error_message": error,
    }
    if completed:
        fields["completed_at"] = now
    else:
        fields["failed_at"] = now
    return Plan(
        JobStatus.PENDING, fields, terminal_failure=False, completed=False, next_run_at=next_run
    )
