"""Workflows (jobs with dependencies) and batches (jobs tallied together)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from uuid import UUID

from .enums import BatchStatus, FailurePolicy, PartialFailureMode
from .exceptions import InvalidBatch, InvalidWorkflow
from .validation import check_json, normalize_id, validate_label

MAX_BATCH_JOBS = 10_000


class JobGroup:
    """A workflow: jobs inserted together, some waiting for others.

    `then(job)` makes `job` depend on every job added before it.
    """

    def __init__(
        self, name: str, failure_policy: FailurePolicy | str = FailurePolicy.FAIL_FAST
    ) -> None:
        validate_label(name, "a workflow's name", InvalidWorkflow)
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
        validate_label(self.name, "a batch's name", InvalidBatch)
        check_json(self.metadata, "batch metadata", InvalidBatch)
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
