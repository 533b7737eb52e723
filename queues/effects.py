"""What a write does to the jobs around it, written once over the store and in the same
transaction: dependents released or failed, workflow failure policies, fail-fast batches, and
the tallies of batches and workflows.

Lock order, to keep concurrent outcomes free of deadlocks: the job's own row (locked by its
fenced write), then other jobs' rows in id order, then batch and workflow rows last.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import replace
from datetime import datetime
from uuid import UUID

from .engine.base import Match, Store
from .enums import DependencyStatus, JobStatus
from .groups import failure_cascade
from .models import Batch, Job, Workflow
from .outcomes import Plan, RecordedOutcome
from .tallies import Change, batch_fields, tally, workflow_fields


def record(store: Store, job: Job, plan: Plan, now: datetime) -> RecordedOutcome:
    """Once the fenced write of `plan` succeeded: `job` takes the written values, and the
    jobs around it react."""
    for name, value in plan.fields.items():
        setattr(job, name, value)
    recorded = RecordedOutcome(status=plan.status, next_run_at=plan.next_run_at)
    changes: list[Change] = [(job.batch_id, job.workflow_id, JobStatus.RUNNING, plan.status)]
    if plan.completed:
        recorded.unblocked = release_dependents(store, job.id)
    if plan.terminal_failure:
        recorded.cancelled, more = after_terminal_failure(store, job, now)
        changes += more
    apply_tallies(store, changes, now)
    return recorded


# Dependencies -------------------------------------------------------------------------------
def release_dependents(store: Store, parent_id: UUID) -> list[UUID]:
    """Mark the waiting dependents of a completed job whose parents are all Completed."""
    return release_waiting(store, store.dependents([parent_id]))


def release_waiting(store: Store, children: Collection[UUID]) -> list[UUID]:
    """Mark those of `children` that wait and whose parents are all Completed."""
    if not children:
        return []
    # Lock the dependents first: two parents completing at once then take turns, and the
    # second sees the first's committed status (no dependent is left waiting forever).
    match = Match(ids=children, dependency_status=DependencyStatus.WAITING)
    waiting = [job.id for job in store.lock_jobs(match)]
    if not waiting:
        return []
    blocked = store.blocked(waiting)
    # Sorted here: MariaDB orders its native UUIDs by their last group first, and every
    # store must answer in the same order.
    ready = sorted(job_id for job_id in waiting if job_id not in blocked)
    if ready:
        store.update_jobs(Match(ids=ready), {"dependency_status": DependencyStatus.SATISFIED})
    return ready


def transitive_dependents(store: Store, job_id: UUID) -> set[UUID]:
    seen: set[UUID] = set()
    frontier = {job_id}
    while frontier:
        frontier = store.dependents(frontier) - seen - {job_id}
        seen |= frontier
    return seen


# Terminal failures --------------------------------------------------------------------------
def after_terminal_failure(store: Store, job: Job, now: datetime):
    """Fail what can no longer run because `job` failed for good (see `failure_cascade`):
    (the ids failed, their changes)."""
    workflow = store.get_group(Workflow, job.workflow_id) if job.workflow_id else None
    batch = store.get_group(Batch, job.batch_id) if job.batch_id else None
    policy = workflow.failure_policy if workflow is not None else None
    mode = batch.failure_mode if batch is not None else None
    cancelled: list[UUID] = []
    changes: list[Change] = []
    for reach, fields in failure_cascade(job.id, policy, mode, now):
        if reach == "workflow":
            match = Match(workflow_id=job.workflow_id)
        elif reach == "dependents":
            match = Match(ids=transitive_dependents(store, job.id))
        else:
            match = Match(batch_id=job.batch_id)
        rows = store.lock_jobs(replace(match, status=JobStatus.PENDING))
        if not rows:
            continue
        # Listed in UUID order, not the database's (MariaDB's native UUIDs sort by their
        # last group first): every store answers alike.
        ids = sorted(row.id for row in rows)
        store.update_jobs(Match(ids=ids, status=JobStatus.PENDING), fields)
        cancelled.extend(ids)
        changes += [(r.batch_id, r.workflow_id, JobStatus.PENDING, JobStatus.FAILED) for r in rows]
    return cancelled, changes


# Tallies ------------------------------------------------------------------------------------
def apply_tallies(store: Store, changes: Iterable[Change], now: datetime) -> None:
    batches, workflows = tally(changes)
    for model, deltas, fields_of in (
        (Batch, batches, batch_fields),
        (Workflow, workflows, workflow_fields),
    ):
        for group_id in sorted(deltas, key=str):
            row = store.lock_group(model, group_id)
            if row is not None:
                store.update_group(model, group_id, fields_of(row, deltas[group_id], now))
