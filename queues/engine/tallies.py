"""The tallies of batches and workflows: what a job's move changes in them, and their status
once the change is added. Pure rules; `effects` writes them in the same transaction as the
move.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime
from uuid import UUID

from queues.callbacks import COMPLETE, FAILURE, SUCCESS
from queues.enums import (
    FAILURE_STATUSES,
    BatchStatus,
    FailurePolicy,
    JobStatus,
    PartialFailureMode,
    WorkflowStatus,
)
from queues.models import Batch, Workflow

#: A job's move: (batch_id, workflow_id, old status or None for a new row, new status or None
#: for a deleted row).
Change = tuple[UUID | None, UUID | None, str | None, str | None]


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


def _tallies(row, delta: list[int]) -> dict:
    return {
        "total_jobs": row.total_jobs + delta[0],
        "completed_jobs": row.completed_jobs + delta[1],
        "failed_jobs": row.failed_jobs + delta[2],
    }


def batch_fields(batch, delta: list[int], now: datetime) -> dict:
    """A batch's tallies, status and completion time once `delta` is added to them."""
    fields = _tallies(batch, delta)
    status = batch_status(
        batch.failure_mode, fields["total_jobs"], fields["completed_jobs"], fields["failed_jobs"]
    )
    finished = status in (BatchStatus.COMPLETED, BatchStatus.FAILED, BatchStatus.PARTIALLY_FAILED)
    completed_at = (batch.completed_at or now) if finished else None
    return {**fields, "status": status, "completed_at": completed_at}


def batch_status(mode: str, total: int, completed: int, failed: int) -> str:
    finished = completed + failed
    if failed and mode == PartialFailureMode.FAIL_FAST:
        return BatchStatus.FAILED
    if total and finished >= total:
        if not failed:
            return BatchStatus.COMPLETED
        return BatchStatus.FAILED if not completed else BatchStatus.PARTIALLY_FAILED
    return BatchStatus.PROCESSING if finished else BatchStatus.PENDING


def empty_group_fields(group, now: datetime) -> dict:
    """A batch or workflow inserted with no jobs (each was a duplicate of a job that holds
    its unique key) is done at once."""
    done = BatchStatus.COMPLETED if isinstance(group, Batch) else WorkflowStatus.COMPLETED
    return {"status": done, "completed_at": now}


def workflow_fields(workflow, delta: list[int], now: datetime) -> dict:
    """A workflow's tallies, status, completion and failure times once `delta` is added."""
    fields = _tallies(workflow, delta)
    total, completed, failed = fields.values()
    if workflow.status == WorkflowStatus.CANCELLED:
        status = WorkflowStatus.CANCELLED
    elif failed and workflow.failure_policy == FailurePolicy.FAIL_FAST:
        status = WorkflowStatus.FAILED
    elif total and completed + failed >= total:
        status = WorkflowStatus.FAILED if failed else WorkflowStatus.COMPLETED
    else:
        status = WorkflowStatus.RUNNING
    return {
        **fields,
        "status": status,
        "completed_at": (workflow.completed_at or now)
        if status == WorkflowStatus.COMPLETED
        else None,
        "failed_at": (workflow.failed_at or now) if status == WorkflowStatus.FAILED else None,
    }


#: The final statuses of batches and of workflows: (success, failure).
_FINAL = {
    Batch: ({BatchStatus.COMPLETED}, {BatchStatus.FAILED, BatchStatus.PARTIALLY_FAILED}),
    Workflow: ({WorkflowStatus.COMPLETED}, {WorkflowStatus.FAILED, WorkflowStatus.CANCELLED}),
}


def finished(group) -> bool:
    """Whether a batch's or workflow's row is in one of its final statuses."""
    success, failure = _FINAL[type(group)]
    return group.status in success | failure


def after_deletion(group, fields: dict, now: datetime) -> dict:
    """`fields` of a group some of whose jobs were deleted: a deletion takes them off the
    tallies but is no outcome. A group that had finished keeps its status (its callbacks
    were called on its outcomes); one left without a job is done, as an empty group is at
    enqueue."""
    if finished(group):
        kept = ["status", "completed_at"] + (["failed_at"] if isinstance(group, Workflow) else [])
        return {**fields, **{name: getattr(group, name) for name in kept}}
    if fields["total_jobs"] == 0:
        return {**fields, **empty_group_fields(group, now)}
    return fields


def callbacks_due(group, fields: dict) -> list[str]:
    """The events whose callbacks `group` (a batch's or workflow's row) calls for once
    `fields` are written: success in its Completed status, failure in its failed ones (a
    fail-fast group's at its first failure), complete in either once no job is left to
    finish. Each is enqueued once: the caller skips those already enqueued."""
    success, failure = _FINAL[type(group)]
    status = fields.get("status", group.status)
    total, completed, failed = (
        fields.get(name, getattr(group, name))
        for name in ("total_jobs", "completed_jobs", "failed_jobs")
    )
    due = [SUCCESS] if status in success else [FAILURE] if status in failure else []
    if due and completed + failed >= total:
        due.append(COMPLETE)
    return due


def _category(status: str | None) -> int:
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
    elif c := _category(old):
        delta[c] -= 1
    if new is None:
        delta[0] -= 1
    elif c := _category(new):
        delta[c] += 1
    return delta
