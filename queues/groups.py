"""Workflows (jobs with dependencies) and batches (jobs tallied together), and their rules:
how new jobs' dependencies settle and what a failure for good reaches (workflow failure
policies, fail-fast batches). Their tallies are in `queues.engine.tallies`.
See docs/design/vocabulary.md."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, Self
from uuid import UUID

from queues.callbacks import COMPLETE, FAILURE, SUCCESS, Callback, specs
from queues.enums import (
    FAILURE_STATUSES,
    BatchStatus,
    DependencyStatus,
    FailurePolicy,
    JobStatus,
    PartialFailureMode,
)
from queues.exceptions import InvalidBatch, InvalidWorkflow
from queues.models import Batch, Workflow
from queues.validation import check_json, normalize_id, validate_label

MAX_BATCH_JOBS = 10_000


class _Callbacks:
    """The callbacks of a batch or a workflow, the methods of both (not their base: the
    reference then names no private class): each a `Job`, or a django.tasks task called
    with `args` and `kwargs`, enqueued once in the transaction that decides its event, with
    the group's tally in its payload (`payload["group"]`). See docs/howto/workflows.md."""

    callbacks: dict[str, Callback]

    def on_success(self, job, args=(), kwargs=None) -> Self:
        """Enqueue `job` once every job of the group completed (none failed)."""
        return self._on(SUCCESS, job, args, kwargs)

    def on_failure(self, job, args=(), kwargs=None) -> Self:
        """Enqueue `job` once the group failed: at its first failure for good if it fails
        fast, else once every job finished and one failed."""
        return self._on(FAILURE, job, args, kwargs)

    def on_complete(self, job, args=(), kwargs=None) -> Self:
        """Enqueue `job` once the group reached its final status and none of its jobs is
        left to finish, whatever the outcome."""
        return self._on(COMPLETE, job, args, kwargs)

    def _on(self, event: str, job, args, kwargs) -> Self:
        self.callbacks[event] = Callback(job, tuple(args or ()), dict(kwargs or {}))
        return self


class JobGroup:
    """A workflow: jobs inserted together, some waiting for others.

    `then(job)` makes `job` depend on every job added before it. `on_success(job)`,
    `on_failure(job)` and `on_complete(job)` declare its callbacks (`queues.callbacks`).
    """

    on_success = _Callbacks.on_success
    on_failure = _Callbacks.on_failure
    on_complete = _Callbacks.on_complete
    _on = _Callbacks._on

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
        self.callbacks = {}  # {event: Callback}

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

    def row(self, now: datetime) -> Workflow:
        """The row of the workflow being enqueued (its callbacks checked); its jobs are
        given its id."""
        callbacks = specs(self.callbacks, now, InvalidWorkflow, self.jobs)
        for job in self.jobs:
            job.workflow_id = self.id
        return Workflow(
            id=self.id,
            name=self.name,
            failure_policy=self.failure_policy,
            created_at=now,
            callbacks=callbacks,
        )


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
    """Jobs of one queue inserted together and tallied as one batch. `on_success(job)`,
    `on_failure(job)` and `on_complete(job)` declare its callbacks (`queues.callbacks`)."""

    on_success = _Callbacks.on_success
    on_failure = _Callbacks.on_failure
    on_complete = _Callbacks.on_complete
    _on = _Callbacks._on

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
        self.callbacks = {}  # {event: Callback}

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

    def row(self, now: datetime) -> Batch:
        """The row of the batch being enqueued (its callbacks checked); its jobs are given
        its id."""
        callbacks = specs(self.callbacks, now, InvalidBatch, self.jobs)
        for job in self.jobs:
            job.batch_id = self.id
        return Batch(
            id=self.id,
            name=self.name,
            failure_mode=self.partial_failure_mode,
            metadata=self.metadata,
            created_at=now,
            callbacks=callbacks,
        )


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

    @classmethod
    def of(cls, batch: Batch, job_errors: dict[UUID, str]) -> BatchResult:
        """The result of a batch row, with the errors of its failed jobs."""
        copied = {name: getattr(batch, name) for name in _BATCH_RESULT_FIELDS}
        return cls(batch_id=batch.id, job_errors=job_errors, **copied)


#: What a `BatchResult` takes from its batch row as it is.
_BATCH_RESULT_FIELDS = (
    "status",
    "total_jobs",
    "completed_jobs",
    "failed_jobs",
    "pending_jobs",
    "created_at",
    "completed_at",
)


# Dependencies and failures -------------------------------------------------------------------
def settle_dependencies(
    jobs: Sequence, by_id: Mapping[str, object], parents: Mapping[str, str], now: datetime
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


#: Which Pending jobs a failure for good reaches: those of the failed job's workflow, its
#: transitive dependents, or those of its batch.
Reach = Literal["workflow", "dependents", "batch"]
#: How the error of a job failed by its fail-fast batch begins (not the batch's first failure).
BATCH_FAILED = "Batch failed"


def failure_cascade(
    job_id: UUID, policy: str | None, batch_mode: str | None, now: datetime
) -> list[tuple[Reach, dict]]:
    """What follows a job's failure for good, in order: which Pending jobs fail, and the
    fields they are written. `policy` is the failure policy of the job's workflow and
    `batch_mode` the failure mode of its batch (None where it has none)."""
    cascade: list[tuple[Reach, dict]] = []
    policy = policy or FailurePolicy.CONTINUE_ON_FAILURE
    if policy == FailurePolicy.FAIL_FAST:
        error = f"Workflow failed: job {job_id} failed (fail-fast policy)"
        cascade.append(("workflow", _failed(error, now, dependency=True)))
    elif policy == FailurePolicy.CONTINUE_ON_FAILURE:
        error = f"Dependency failed: job {job_id} failed"
        cascade.append(("dependents", _failed(error, now, dependency=True)))
    # FailurePolicy.MANUAL: dependents keep waiting until an operator retries the job.
    if batch_mode == PartialFailureMode.FAIL_FAST:
        cascade.append(("batch", _failed(batch_failed_error(job_id), now)))
    return cascade


def batch_failed_error(first_failure) -> str:
    """The error of the jobs a fail-fast batch fails after `first_failure` failed."""
    return f"{BATCH_FAILED}: job {first_failure} failed (fail-fast mode)"


def _failed(error: str, now: datetime, dependency: bool = False) -> dict:
    fields = {"status": JobStatus.FAILED, "error_message": error, "failed_at": now}
    if dependency:
        fields["dependency_status"] = DependencyStatus.FAILED
    return fields
