"""What a write does to the jobs around it, in its transaction: dependents released or failed,
workflow failure policies, fail-fast batches, and the tallies of batches and workflows. A
claim's outcomes take their effects together (`record_all`), in a fixed lock order: see
docs/design/engine.md ("Effects and tallies").
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from uuid import UUID

from queues.engine.callbacks import with_callbacks
from queues.engine.outcomes import Plan, RecordedOutcome
from queues.engine.tallies import Change, after_deletion, batch_fields, tally, workflow_fields
from queues.enums import DependencyStatus, JobStatus
from queues.groups import failure_cascade
from queues.models import Batch, Job, Workflow
from queues.store.base import Match, Store


def record(store: Store, job: Job, plan: Plan, now: datetime, sender=None) -> RecordedOutcome:
    """Once the fenced write of `plan` succeeded: `job` takes the written values, and the
    jobs around it react."""
    return record_all(store, [(job, plan)], now, sender=sender)[0]


def record_all(
    store: Store,
    written: Sequence[tuple[Job, Plan]],
    now: datetime,
    with_dependents: Collection[UUID] | None = None,
    sender=None,
) -> list[RecordedOutcome]:
    """Once the fenced writes of a claim's plans succeeded (each job once): each job takes
    its written values, and the jobs around them react, as if recorded one by one in this
    order. `with_dependents` names those that have dependents when the fence told (None:
    the store is asked); `sender` is the queue's class (for the signals of callbacks)."""
    recorded: list[RecordedOutcome] = []
    changes: list[Change] = []
    for job, plan in written:
        for name, value in plan.fields.items():
            setattr(job, name, value)
        recorded.append(RecordedOutcome(status=plan.status, next_run_at=plan.next_run_at))
        changes.append((job.batch_id, job.workflow_id, JobStatus.RUNNING, plan.status))

    def parents(jobs: Iterable[Job]) -> list[UUID]:
        ids = [job.id for job in jobs]
        return ids if with_dependents is None else [i for i in ids if i in with_dependents]

    order = {job.id: i for i, (job, _) in enumerate(written)}
    released = release_all(store, parents(job for job, plan in written if plan.completed))
    failing = [job for job, plan in written if plan.terminal_failure]
    cancelled, more = fail_all(store, failing, set(parents(failing)), now, order)
    changes += more
    # A dependent that a failure listed before its parent failed was, one by one, failed
    # before that parent completed: not released (its row ends the same either way).
    failed_by = {child: order[job_id] for job_id, ids in cancelled.items() for child in ids}
    for parent, children in released.items():
        released[parent] = [c for c in children if failed_by.get(c, len(order)) > order[parent]]
    for (job, _), answer in zip(written, recorded, strict=True):
        answer.unblocked = released.get(job.id, [])
        answer.cancelled = cancelled.get(job.id, [])
    apply_tallies(store, changes, now, sender)
    return recorded


# Dependencies -------------------------------------------------------------------------------
def release_all(store: Store, parent_ids: Sequence[UUID]) -> dict[UUID, list[UUID]]:
    """Release the waiting dependents of completed jobs whose parents are all Completed,
    with one read of the edges: {parent: the dependents released, sorted}. A dependent of
    several is told under the last listed: completed one by one in this order, the last of
    its parents released it."""
    if not parent_ids:
        return {}
    children = store.dependents_of(parent_ids)
    ready = set(release_waiting(store, set().union(*children.values())))
    released: dict[UUID, list[UUID]] = {}
    for parent in reversed(parent_ids):
        mine = sorted(ready.intersection(children.get(parent, ())))
        ready.difference_update(mine)
        if mine:
            released[parent] = mine
    return released


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
    cancelled, changes = fail_all(store, [job], None, now)
    return cancelled.get(job.id, []), changes


def fail_all(
    store: Store,
    jobs: Sequence[Job],
    with_dependents: Collection[UUID] | None,
    now: datetime,
    order: Mapping[UUID, int] | None = None,
) -> tuple[dict[UUID, list[UUID]], list[Change]]:
    """Fail what can no longer run because `jobs` failed for good, as if one by one in
    their order: ({job: the ids it failed}, their changes). `order` places the jobs of the
    claim whose outcomes were written (one by one, those after a failure were still
    Running when it happened); `with_dependents` (None: unknown) spares the read of the
    dependents of the others. The Pending jobs of a workflow or batch are locked once
    (at its first failure): a later failure fails only those the earlier left, and the
    claim's jobs sent back to Pending between them."""
    order = order or {}
    groups: dict[tuple[type, UUID], object] = {}
    pending: dict[tuple[str, UUID], list[Job]] = {}
    taken: set[UUID] = set()
    cancelled: dict[UUID, list[UUID]] = {}
    changes: list[Change] = []

    def group(model, group_id):
        if group_id is not None and (model, group_id) not in groups:
            groups[model, group_id] = store.get_group(model, group_id)
        return groups.get((model, group_id))

    for job in jobs:
        here = order.get(job.id, 0)
        workflow, batch = group(Workflow, job.workflow_id), group(Batch, job.batch_id)
        policy = workflow.failure_policy if workflow is not None else None
        mode = batch.failure_mode if batch is not None else None
        for reach, fields in failure_cascade(job.id, policy, mode, now):
            if reach == "dependents":
                if with_dependents is not None and job.id not in with_dependents:
                    continue
                match = Match(ids=transitive_dependents(store, job.id))
                rows = store.lock_jobs(replace(match, status=JobStatus.PENDING))
            else:
                key = (reach, job.workflow_id if reach == "workflow" else job.batch_id)
                if key not in pending:
                    match = (
                        Match(workflow_id=key[1]) if reach == "workflow" else Match(batch_id=key[1])
                    )
                    pending[key] = store.lock_jobs(replace(match, status=JobStatus.PENDING))
                rows = pending[key]
            rows = [r for r in rows if r.id not in taken and order.get(r.id, -1) < here]
            if not rows:
                continue
            # Listed in UUID order, not the database's (MariaDB's native UUIDs sort by
            # their last group first): every store answers alike.
            ids = sorted(row.id for row in rows)
            taken.update(ids)
            store.update_jobs(Match(ids=ids, status=JobStatus.PENDING), fields)
            cancelled.setdefault(job.id, []).extend(ids)
            changes += [
                (r.batch_id, r.workflow_id, JobStatus.PENDING, JobStatus.FAILED) for r in rows
            ]
    return cancelled, changes


# Tallies ------------------------------------------------------------------------------------
def apply_tallies(
    store: Store, changes: Iterable[Change], now: datetime, sender=None, deleted: bool = False
) -> None:
    """Write the tallies `changes` move, each group row locked and written once, with the
    callbacks its new status calls for (`sender`: the queue's class, for their signal).
    `deleted`: the changes are deletions, which leave a finished group's status as it is
    (`tallies.after_deletion`)."""
    batches, workflows = tally(changes)
    for model, deltas, fields_of in (
        (Batch, batches, batch_fields),
        (Workflow, workflows, workflow_fields),
    ):
        for group_id in sorted(deltas, key=str):
            row = store.lock_group(model, group_id)
            if row is not None:
                fields = fields_of(row, deltas[group_id], now)
                if deleted:
                    fields = after_deletion(row, fields, now)
                fields = with_callbacks(store, row, fields, now, sender)
                store.update_group(model, group_id, fields)
