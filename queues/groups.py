"""Workflows (jobs with dependencies) and batches (jobs tallied together)."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from uuid import UUID

from .enums import (
    FAILURE_STATUSES,
    BatchStatus,
    FailurePolicy,
    JobStatus,
    PartialFailureMode,
    WorkflowStatus,
)
from .exceptions import InvalidBatch, InvalidWorkflow
from .validation import normalize_id

MAX_BATCH_JOBS = 10_000


class JobGroup:
    """A workflow: jobs inserted together, some waiting for others.

    `then(job)` makes `job` depend on every job added before it.
    """

    def __init__(
        self, name: str, failure_policy: FailurePolicy | str = FailurePolicy.FAIL_FAST
    ) -> None:
        if not isinstance(name, str) or not name.strip():
            raise InvalidWorkflow("a workflow needs a name")
        if failure_policy not in FailurePolicy.values:
            raise InvalidWorkflow(f"unknown failure policy: {failure_policy!r}")
        self.id: UUID = uuid.uuid4()
        self.name = name
        self.failure_policy = FailurePolicy(failure_policy)
        self.jobs: list = []

    def add_job(self, job) -> JobGroup:
        self.jobs.append(job)
        return self

    def add_parallel_jobs(self, jobs: Iterable) -> JobGroup:
        self.jobs.extend(jobs)
        return self

    def then(self, job) -> JobGroup:
        for earlier in self.jobs:
            job.depends_on_job(earlier)
        self.jobs.append(job)
        return self

    def with_failure_policy(self, policy: FailurePolicy | str) -> JobGroup:
        if policy not in FailurePolicy.values:
            raise InvalidWorkflow(f"unknown failure policy: {policy!r}")
        self.failure_policy = FailurePolicy(policy)
        return self

    def validate(self) -> None:
        """Every dependency is a job of the group, and the graph has no cycle."""
        if not self.jobs:
            raise InvalidWorkflow(f"workflow {self.name!r} has no jobs")
        ids = [str(job.id) for job in self.jobs]
        if len(set(ids)) != len(ids):
            raise InvalidWorkflow(f"workflow {self.name!r} holds the same job twice")
        graph: dict[str, list[str]] = {}
        for job in self.jobs:
            deps = [normalize_id(d) for d in job.depends_on or []]
            for dep in deps:
                if dep not in ids:
                    raise InvalidWorkflow(
                        f"job {job.id} depends on {dep}, which is not in workflow {self.name!r}"
                    )
            graph[str(job.id)] = deps
        _check_acyclic(graph, self.name)


def _check_acyclic(graph: dict[str, list[str]], name: str) -> None:
    white, grey, black = 0, 1, 2
    colour = dict.fromkeys(graph, white)
    for start in graph:
        if colour[start] != white:
            continue
        stack = [(start, iter(graph[start]))]
        colour[start] = grey
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                colour[node] = black
                stack.pop()
            elif colour[child] == grey:
                raise InvalidWorkflow(f"workflow {name!r} has a dependency cycle through {child}")
            elif colour[child] == white:
                colour[child] = grey
                stack.append((child, iter(graph[child])))


class JobBatch:
    """Jobs of one queue inserted together and tallied as one batch."""

    def __init__(
        self,
        name: str,
        jobs: Iterable | None = None,
        partial_failure_mode: PartialFailureMode | str = PartialFailureMode.CONTINUE_ON_ERROR,
        metadata: dict[str, str] | None = None,
    ) -> None:
        self.id: UUID = uuid.uuid4()
        self.name = name
        self.jobs = list(jobs or [])
        if partial_failure_mode not in PartialFailureMode.values:
            raise InvalidBatch(f"unknown partial failure mode: {partial_failure_mode!r}")
        self.partial_failure_mode = PartialFailureMode(partial_failure_mode)
        self.metadata = dict(metadata or {})

    def with_jobs(self, jobs: Iterable) -> JobBatch:
        self.jobs = list(jobs)
        return self

    def add_job(self, job) -> JobBatch:
        self.jobs.append(job)
        return self

    def with_partial_failure_handling(self, mode: PartialFailureMode | str) -> JobBatch:
        if mode not in PartialFailureMode.values:
            raise InvalidBatch(f"unknown partial failure mode: {mode!r}")
        self.partial_failure_mode = PartialFailureMode(mode)
        return self

    def validate(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise InvalidBatch("a batch needs a name")
        if not self.jobs:
            raise InvalidBatch(f"batch {self.name!r} is empty")
        if len(self.jobs) > MAX_BATCH_JOBS:
            raise InvalidBatch(f"batch {self.name!r} has more than {MAX_BATCH_JOBS} jobs")
        queues = {job.queue_name for job in self.jobs}
        if len(queues) > 1:
            raise InvalidBatch(f"batch {self.name!r} mixes queues: {sorted(map(str, queues))}")
        if any(job.depends_on for job in self.jobs):
            raise InvalidBatch("jobs of a batch cannot have dependencies; use a workflow")


@dataclass
class BatchResult:
    batch_id: UUID
    status: BatchStatus
    total_jobs: int
    completed_jobs: int
    failed_jobs: int
    pending_jobs: int
    created_at: datetime | None = None
    completed_at: datetime | None = None
    job_errors: dict[UUID, str] = field(default_factory=dict)

    @property
    def success_rate(self) -> float:
        return self.completed_jobs / self.total_jobs if self.total_jobs else 0.0


# Tallies -------------------------------------------------------------------------------------
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
