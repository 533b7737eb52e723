"""Side effects of a job's outcome on the jobs around it, written in the outcome's transaction:
dependents released or failed, workflow failure policies, fail-fast batches, and the tallies of
batches and workflows.

Lock order, to keep concurrent outcomes free of deadlocks: the job's own row (locked by its
fenced UPDATE), then other jobs' rows in id order, then batch and workflow rows last.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime
from uuid import UUID

from django.db.models import F

from ..enums import (
    FAILURE_STATUSES,
    BatchStatus,
    DependencyStatus,
    FailurePolicy,
    JobStatus,
    WorkflowStatus,
)
from ..models import Batch, Job, JobDependency, Workflow
from ..outcomes import batch_status
from ..rules import failure_cascade

# (batch_id, workflow_id, old status or None for a new row, new status or None for a deleted row)
Change = tuple[UUID | None, UUID | None, str | None, str | None]


class Graph:
    def __init__(self, using: str) -> None:
        self.using = using

    def _jobs(self):
        return Job.objects.using(self.using)

    # Dependencies -----------------------------------------------------------------------
    def release_dependents(self, parent_id: UUID) -> list[UUID]:
        """Mark the waiting dependents of a completed job whose parents are all Completed."""
        children = list(
            JobDependency.objects.using(self.using)
            .filter(parent_id=parent_id)
            .values_list("job_id", flat=True)
        )
        return self.release_waiting(children)

    def release_waiting(self, children: list[UUID]) -> list[UUID]:
        """Mark those of `children` that wait and whose parents are all Completed."""
        if not children:
            return []
        # Lock the dependents first: two parents completing at once then take turns, and the
        # second sees the first's committed status (no dependent is left waiting forever).
        waiting = list(
            self._jobs()
            .select_for_update()
            .filter(id__in=children, dependency_status=DependencyStatus.WAITING)
            .order_by("id")
            .values_list("id", flat=True)
        )
        if not waiting:
            return []
        blocked = set(
            JobDependency.objects.using(self.using)
            .filter(job_id__in=waiting)
            .exclude(parent__status=JobStatus.COMPLETED)
            .values_list("job_id", flat=True)
        )
        # Sorted here: MariaDB orders its native UUIDs by their last group first, and every
        # queue must answer in the same order.
        ready = sorted(job_id for job_id in waiting if job_id not in blocked)
        if ready:
            self._jobs().filter(id__in=ready).update(dependency_status=DependencyStatus.SATISFIED)
        return ready

    def transitive_dependents(self, job_id: UUID) -> set[UUID]:
        seen: set[UUID] = set()
        frontier = {job_id}
        while frontier:
            children = set(
                JobDependency.objects.using(self.using)
                .filter(parent_id__in=frontier)
                .values_list("job_id", flat=True)
            )
            frontier = children - seen - {job_id}
            seen |= frontier
        return seen

    # Terminal failures ------------------------------------------------------------------
    def after_terminal_failure(self, job, now: datetime) -> tuple[list[UUID], list[Change]]:
        """Fail what can no longer run because `job` failed for good (see
        `rules.failure_cascade`)."""
        policy = mode = None
        if job.workflow_id:
            policy = (
                Workflow.objects.using(self.using)
                .filter(id=job.workflow_id)
                .values_list("failure_policy", flat=True)
                .first()
            )
        if job.batch_id:
            mode = (
                Batch.objects.using(self.using)
                .filter(id=job.batch_id)
                .values_list("failure_mode", flat=True)
                .first()
            )
        cancelled: list[UUID] = []
        changes: list[Change] = []
        for reach, fields in failure_cascade(job.id, policy, mode, now):
            if reach == "workflow":
                targets = self._jobs().filter(workflow_id=job.workflow_id)
            elif reach == "dependents":
                targets = self._jobs().filter(id__in=self.transitive_dependents(job.id))
            else:
                targets = self._jobs().filter(batch_id=job.batch_id)
            self._fail_pending(targets, fields, cancelled, changes)
        return cancelled, changes

    def _fail_pending(self, queryset, fields: dict, cancelled, changes) -> None:
        rows = list(
            queryset.select_for_update()
            .filter(status=JobStatus.PENDING)
            .order_by("id")
            .values_list("id", "batch_id", "workflow_id")
        )
        if not rows:
            return
        # Listed in UUID order, not the database's (MariaDB's native UUIDs sort by their last
        # group first): every queue answers alike.
        ids = sorted(row[0] for row in rows)
        self._jobs().filter(id__in=ids, status=JobStatus.PENDING).update(**fields)
        cancelled.extend(ids)
        changes.extend((b, w, JobStatus.PENDING, JobStatus.FAILED) for _, b, w in rows)

    # Tallies ----------------------------------------------------------------------------
    def apply_tallies(self, changes: Iterable[Change], now: datetime) -> None:
        batches, workflows = tally(changes)
        for batch_id in sorted(batches, key=str):
            self._update_batch(batch_id, batches[batch_id], now)
        for workflow_id in sorted(workflows, key=str):
            self._update_workflow(workflow_id, workflows[workflow_id], now)

    def _update_batch(self, batch_id, delta, now) -> None:
        batch = Batch.objects.using(self.using).select_for_update().filter(id=batch_id).first()
        if batch is None:
            return
        status, completed_at = batch_state(batch, delta, now)
        Batch.objects.using(self.using).filter(id=batch_id).update(
            total_jobs=F("total_jobs") + delta[0],
            completed_jobs=F("completed_jobs") + delta[1],
            failed_jobs=F("failed_jobs") + delta[2],
            status=status,
            completed_at=completed_at,
        )

    def _update_workflow(self, workflow_id, delta, now) -> None:
        workflow = (
            Workflow.objects.using(self.using).select_for_update().filter(id=workflow_id).first()
        )
        if workflow is None:
            return
        status, completed_at, failed_at = workflow_state(workflow, delta, now)
        Workflow.objects.using(self.using).filter(id=workflow_id).update(
            total_jobs=F("total_jobs") + delta[0],
            completed_jobs=F("completed_jobs") + delta[1],
            failed_jobs=F("failed_jobs") + delta[2],
            status=status,
            completed_at=completed_at,
            failed_at=failed_at,
        )


def tally(changes: Iterable[Change]) -> tuple[dict[UUID, list[int]], dict[UUID, list[int]]]:
    """The [total, completed, failed] change of each batch and workflow that `changes` touch."""
    batches: dict[UUID, list[int]] = defaultdict(lambda: [0, 0, 0])
    workflows: dict[UUID, list[int]] = defaultdict(lambda: [0, 0, 0])
    for batch_id, workflow_id, old, new in changes:
        delta = _delta(old, new)
        for key, table in ((batch_id, batches), (workflow_id, workflows)):
            if key is not None and any(delta):
                table[key] = [a + b for a, b in zip(table[key], delta, strict=True)]
    return batches, workflows


def batch_state(batch, delta: list[int], now: datetime) -> tuple[str, datetime | None]:
    """A batch's status and completion time once `delta` is added to its tallies."""
    total = batch.total_jobs + delta[0]
    completed = batch.completed_jobs + delta[1]
    failed = batch.failed_jobs + delta[2]
    status = batch_status(batch.failure_mode, total, completed, failed)
    finished = status in (BatchStatus.COMPLETED, BatchStatus.FAILED, BatchStatus.PARTIALLY_FAILED)
    return status, (batch.completed_at or now) if finished else None


def workflow_state(workflow, delta: list[int], now: datetime):
    """A workflow's status, completion and failure times once `delta` is added to its tallies."""
    total = workflow.total_jobs + delta[0]
    completed = workflow.completed_jobs + delta[1]
    failed = workflow.failed_jobs + delta[2]
    if workflow.status == WorkflowStatus.CANCELLED:
        status = WorkflowStatus.CANCELLED
    elif failed and workflow.failure_policy == FailurePolicy.FAIL_FAST:
        status = WorkflowStatus.FAILED
    elif total and completed + failed >= total:
        status = WorkflowStatus.FAILED if failed else WorkflowStatus.COMPLETED
    else:
        status = WorkflowStatus.RUNNING
    completed_at = (workflow.completed_at or now) if status == WorkflowStatus.COMPLETED else None
    failed_at = (workflow.failed_at or now) if status == WorkflowStatus.FAILED else None
    return status, completed_at, failed_at


def category(status: str | None) -> int:
    """0 pending (or not counted), 1 completed, 2 failed."""
    if status == JobStatus.COMPLETED:
        return 1
    if status in FAILURE_STATUSES:
        return 2
    return 0


def _delta(old: str | None, new: str | None) -> list[int]:
    """[total, completed, failed] change for one job moving from `old` to `new`."""
    delta = [0, 0, 0]
    if old is None:
        delta[0] += 1
    else:
        c = category(old)
        if c:
            delta[c] -= 1
    if new is None:
        delta[0] -= 1
    else:
        c = category(new)
        if c:
            delta[c] += 1
    return delta
