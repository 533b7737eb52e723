"""Pure rules shared by the database queue and TestQueue: how new jobs are prepared and their
dependencies settled, the claim order, and the checks of ids and leases."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from uuid import UUID

from .enums import FAILURE_STATUSES, DependencyStatus, JobStatus
from .exceptions import InvalidJob, InvalidWorkflow
from .models import Job
from .outcomes import JobOutcome
from .validation import _check_json, normalize_id, validate_job


def prepare_jobs(jobs: Sequence[Job], now: datetime, rebase: bool) -> None:
    """Validate and normalise new jobs in place, stamped `now`. With `rebase` (a clock that
    is not the system's), each job keeps the delay it was built with, counted from `now`."""
    if not jobs:
        return
    for job in jobs:
        if not isinstance(job, Job):
            raise InvalidJob(f"expected a Job, got {type(job).__name__}")
        if rebase and job.scheduled_at and job.created_at:
            # A moved clock: keep the delay the job was built with.
            job.scheduled_at = now + (job.scheduled_at - job.created_at)
        validate_job(job, now)
        job.created_at = now
    ids = [job.id for job in jobs]
    if len(set(ids)) != len(ids):
        raise InvalidJob("the same job was given twice")


def settle_dependencies(
    jobs: Sequence[Job], by_id: Mapping[str, Job], parents: Mapping[str, str], now: datetime
) -> None:
    """Each new job with dependencies starts waiting, satisfied (every parent already
    completed) or failed (a parent already failed for good). `by_id` holds the new jobs and
    `parents` the statuses of the stored parents, both by id string."""
    status_of = dict(parents)
    changed = True
    while changed:
        changed = False
        for job in jobs:
            if not job.depends_on or job.status == JobStatus.FAILED:
                continue
            statuses = [status_of.get(p) or by_id[p].status for p in job.depends_on]
            pairs = zip(job.depends_on, statuses, strict=True)
            failed = [p for p, s in pairs if s in FAILURE_STATUSES]
            if failed:
                job.status = JobStatus.FAILED
                job.dependency_status = DependencyStatus.FAILED
                job.error_message = f"Dependency failed: job {failed[0]} failed"
                job.failed_at = now
                changed = True
            elif all(s == JobStatus.COMPLETED for s in statuses):
                job.dependency_status = DependencyStatus.SATISFIED
            else:
                job.dependency_status = DependencyStatus.WAITING


def claim_key(job: Job):
    """Strict claim order: highest priority, then oldest, then id."""
    return (-job.priority, job.scheduled_at, str(job.id))


def age_key(job: Job):
    """Claim order within one priority level."""
    return (job.scheduled_at, str(job.id))


def parse_job_id(value) -> UUID:
    try:
        return UUID(normalize_id(value))
    except InvalidWorkflow as exc:
        raise InvalidJob(f"{value!r} is not a job id") from exc


def positive_lease(lease: timedelta) -> timedelta:
    if not isinstance(lease, timedelta) or lease <= timedelta(0):
        raise ValueError("a lease must be a positive timedelta")
    return lease


def check_outcome(outcome: JobOutcome) -> None:
    """Refuse an outcome that is not a `JobOutcome`, or whose result cannot be stored."""
    if not isinstance(outcome, JobOutcome):
        raise TypeError("outcome must be a JobOutcome")
    if outcome.kind == "completed" and outcome.result is not None:
        _check_json(outcome.result, "result")
