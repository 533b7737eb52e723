"""Which operator actions a job offers, decided once, by its status (and whether it is
recurring) alone: the queue's actions ask `check` before they write, its batch actions
`sort_out`, the dashboard's buttons and the admin's actions `offered`. The table of actions
is in docs/design/engine.md ("Operator actions").
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


def sort_out(action: str, locked, where=None) -> tuple[list, dict, list]:
    """The locked rows of an action on many jobs, in id order: those it goes on with (they
    offer `action` and, if given, `where` holds for them), those refused (id -> why), and
    those kept (`where` no longer holds: the row changed since it was selected)."""
    acted, refused, kept = [], {}, []
    for job in sorted(locked, key=lambda job: str(job.id)):
        reason = refusal(action, job)
        if reason is not None:
            refused[job.id] = reason
        elif where is not None and not where(job):
            kept.append(job.id)
        else:
            acted.append(job)
    return acted, refused, kept
