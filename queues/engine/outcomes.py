"""What a run's outcome writes (and what the reaper's and the operators' transitions write):
the rules, with no store. The queue writes the fields a plan gives, fenced by the run's
token (see docs/design/engine.md, "Fencing with run tokens").
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from queues.cron import CronSchedule
from queues.engine import transitions
from queues.enums import FAILURE_STATUSES, AttemptEnd, DependencyStatus, JobStatus
from queues.models import ReaperRun
from queues.retry import RetryStrategy
from queues.text import MAX_TRACEBACK, storable, storable_label
from queues.validation import StoredJSON, check_json, check_time

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
    #: For the error history (`FailedAttempt`): the exception's class (its dotted path)
    #: and traceback.
    traceback: str | None = None
    exception_class: str | None = None
    #: What ended the attempt (`AttemptEnd`); None: the handler (its error or time-out).
    ended_by: str | None = None

    def __post_init__(self) -> None:
        # The error is stored whatever it holds: cleaned and cut here (`queues.text`), so
        # that recording the failure cannot fail.
        if self.error is not None:
            object.__setattr__(self, "error", storable(self.error))
        if self.traceback is not None:
            object.__setattr__(self, "traceback", storable(self.traceback, MAX_TRACEBACK))
        if self.exception_class is not None:
            object.__setattr__(self, "exception_class", storable_label(self.exception_class))

    @classmethod
    def completed(cls, result: Any = None) -> JobOutcome:
        # One per job, on the hot path: only the fields a completion has, the others left at
        # their class defaults (None) as `__init__` would set them, nothing to clean.
        outcome = object.__new__(cls)
        object.__setattr__(outcome, "kind", "completed")
        object.__setattr__(outcome, "result", result)
        return outcome

    @classmethod
    def failed(
        cls, error: str, traceback: str | None = None, exception_class: str | None = None
    ) -> JobOutcome:
        """Retried with backoff while attempts remain, else Dead. The traceback and the
        exception's class go to the error history."""
        return cls("failed", error=error, traceback=traceback, exception_class=exception_class)

    @classmethod
    def retry(
        cls,
        retry_at: datetime,
        error: str | None = None,
        traceback: str | None = None,
        exception_class: str | None = None,
    ) -> JobOutcome:
        """Back to Pending at `retry_at`, whatever the attempts."""
        return cls(
            "retry",
            error=error,
            retry_at=retry_at,
            traceback=traceback,
            exception_class=exception_class,
        )

    @classmethod
    def dead(
        cls, error: str, traceback: str | None = None, exception_class: str | None = None
    ) -> JobOutcome:
        return cls("dead", error=error, traceback=traceback, exception_class=exception_class)

    @classmethod
    def timed_out(cls, error: str = "Job timed out") -> JobOutcome:
        """Retried while attempts remain; TimedOut on the last attempt."""
        return cls("timed_out", error=error)

    @classmethod
    def cancelled(cls, error: str) -> JobOutcome:
        """Failed without running again (e.g. its fail-fast batch failed)."""
        return cls("cancelled", error=error)


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

    def note(self, job_id: UUID, recorded: RecordedOutcome) -> None:
        (self.dead if recorded.status == JobStatus.DEAD else self.requeued).append(job_id)

    def row(self, now: datetime, ran_by: str, queue_name: str | None) -> ReaperRun:
        """The `ReaperRun` that records this recovery."""
        return ReaperRun(
            ran_at=now,
            ran_by=storable_label(ran_by),
            queue_name=queue_name,
            requeued_ids=[str(i) for i in self.requeued],
            dead_ids=[str(i) for i in self.dead],
        )


@dataclass(frozen=True)
class Plan:
    """The row's new values, and what the outcome means for the job's graph."""

    status: JobStatus
    fields: dict[str, Any]
    terminal_failure: bool  # dependents, workflows and fail-fast batches react to it
    completed: bool  # dependents may be released
    next_run_at: datetime | None = None


_RUN_CLEARED = {"run_token": None, "lease_expires_at": None}


def check_outcome(outcome: JobOutcome) -> None:
    """Refuse an outcome that is not a `JobOutcome`, or whose result cannot be stored. A
    completion's checked result keeps its JSON text (`stored_result`): one encoding a job."""
    if not isinstance(outcome, JobOutcome):
        raise TypeError("outcome must be a JobOutcome")
    checked = "_stored" in outcome.__dict__
    if outcome.kind == "completed" and outcome.result is not None and not checked:
        text = StoredJSON(check_json(outcome.result, "result"))
        object.__setattr__(outcome, "_stored", text)
    check_time(outcome.retry_at, "a retry time")


def stored_result(outcome: JobOutcome):
    """What a completion's write stores: the JSON text its check made, else the result."""
    return outcome.__dict__.get("_stored", outcome.result)


def reaper_outcome(job, now: datetime, ended_by: str = AttemptEnd.LEASE_EXPIRED) -> JobOutcome:
    """The outcome the reaper records for a run whose lease expired (the lifeline: whose
    process died)."""
    if job.attempts >= job.max_attempts:
        return JobOutcome("dead", error=LEASE_EXPIRED_ERROR, ended_by=ended_by)
    return JobOutcome("retry", error=LEASE_EXPIRED_ERROR, retry_at=now, ended_by=ended_by)


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


# Operators' transitions ---------------------------------------------------------------------
def retry_fields(job, scheduled_at: datetime, blocked) -> dict[str, Any]:
    """What `retry_job` writes: Pending at `scheduled_at`, the run fenced out, a terminal
    job's attempts given back. `blocked()` tells whether the job still waits for a parent
    that is not Completed (asked only when its dependency had failed)."""
    transitions.check(transitions.RETRY, job)
    fields: dict[str, Any] = {
        "status": JobStatus.PENDING,
        "scheduled_at": scheduled_at,
        "started_at": None,
        "last_heartbeat_at": None,
        **_RUN_CLEARED,
    }
    if job.status in FAILURE_STATUSES:
        fields.update(attempts=0, failed_at=None, timed_out_at=None)
    if job.dependency_status == DependencyStatus.FAILED:
        fields["dependency_status"] = (
            DependencyStatus.WAITING if blocked() else DependencyStatus.SATISFIED
        )
    return fields


def fail_for_good_fields(job, status: JobStatus, reason: str, now: datetime) -> dict[str, Any]:
    """What `cancel_job` and `mark_job_dead` write on a Pending or Running job."""
    action = transitions.CANCEL if status == JobStatus.FAILED else transitions.MARK_DEAD
    transitions.check(action, job)
    return {
        "status": status,
        "error_message": storable(reason),
        "failed_at": now,
        **_RUN_CLEARED,
        "recurring": False,
    }
