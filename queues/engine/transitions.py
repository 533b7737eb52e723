"""Which operator actions a job offers, decided once: both queues' `retry_job`, `cancel_job`,
`mark_job_dead`, `delete_job`, `release_job_run` and the recurring toggles ask `check` before
they write, and the dashboard's buttons and the admin's actions ask `offered`.

An action is offered by the job's status (and whether it is recurring) alone:
- retry: any job but a Completed or Archived one that is not recurring (a Running job's run
  is fenced out, a Pending one is rescheduled);
- cancel, mark dead: a job that has not finished (Pending, Running, Retrying);
- delete: any job but a Running one (cancel it first: a handler is working on it);
- release: a Running job (its claim handed back, the attempt taken back);
- enable / disable: a recurring job.
"""

from __future__ import annotations

from queues.enums import JobStatus
from queues.exceptions import InvalidJobTransition

RETRY = "retry"
CANCEL = "cancel"
MARK_DEAD = "mark_dead"
DELETE = "delete"
RELEASE = "release"
RECURRING = "recurring"  # enable or disable a recurring job
ACTIONS = (RETRY, CANCEL, MARK_DEAD, DELETE, RELEASE, RECURRING)

_UNFINISHED = (JobStatus.PENDING, JobStatus.RUNNING, JobStatus.RETRYING)
_NEVER_RETRIED = (JobStatus.COMPLETED, JobStatus.ARCHIVED)


def refusal(action: str, job) -> str | None:
    """Why `job` does not offer `action`, or None if it does."""
    status, recurring = job.status, bool(job.cron_schedule)
    if action == RETRY:
        if status in _NEVER_RETRIED and not recurring:
            return f"job {job.id} is {status}; it cannot be retried"
    elif action in (CANCEL, MARK_DEAD):
        if status not in _UNFINISHED:
            return f"job {job.id} is {status}, not Pending or Running"
    elif action == DELETE:
        if status == JobStatus.RUNNING:
            return f"job {job.id} is Running; cancel it first"
    elif action == RELEASE:
        if status != JobStatus.RUNNING:
            return f"job {job.id} is not Running"
    elif action == RECURRING:
        if not recurring:
            return f"job {job.id} is not a recurring job"
    else:
        raise ValueError(f"unknown action: {action!r}")
    return None


def check(action: str, job) -> None:
    """Raise `InvalidJobTransition` unless `job` offers `action`."""
    reason = refusal(action, job)
    if reason is not None:
        raise InvalidJobTransition(reason)


def offered(job) -> frozenset[str]:
    """The actions `job` offers."""
    return frozenset(action for action in ACTIONS if refusal(action, job) is None)


def first_refusal(action: str, jobs) -> str | None:
    """The refusal of the first of `jobs` that does not offer `action` (a batch or a
    workflow is deleted only when each of its jobs can be)."""
    for job in jobs:
        reason = refusal(action, job)
        if reason is not None:
            return reason
    return None
