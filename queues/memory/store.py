"""TestQueue's store: jobs, dependency edges, batches, workflows, pauses and reaper runs in
plain dicts, with the side effects of outcomes that `engine/graph.py` writes in SQL (dependents
released or failed, workflow failure policies, fail-fast batches, tallies).

The store holds its own copies: what goes in is copied, and what comes out is copied again,
so a caller never shares an object with it. It has no lock of its own: TestQueue holds one
around every use.
"""

from __future__ import annotations

import copy
import json
import warnings
from collections import defaultdict
from datetime import UTC, datetime
from uuid import UUID

from django.utils import timezone

from ..engine.base import Match
from ..enums import FAILURE_STATUSES, DependencyStatus, JobStatus, PartialFailureMode
from ..exceptions import InvalidBatch, InvalidJob, InvalidWorkflow, JobNotFound
from ..models import Batch, Job, QueuePause, ReaperRun, Workflow
from ..rules import (
    BATCH_FAILED,
    age_key,
    batch_failed_error,
    claim_key,
    settle_dependencies,
)

#: The JSON columns: stored as the database would store them (a JSON round trip).
_JSON_FIELDS = ("payload", "result", "retry_strategy", "depends_on")
_COLUMNS = Job._meta.concrete_fields
_PLAIN_COMPLETION = {
    "status": JobStatus.COMPLETED,
    "result": None,
    "run_token": None,
    "lease_expires_at": None,
}
_CLAIMABLE_DEPENDENCY = (DependencyStatus.NONE, DependencyStatus.SATISFIED)


def copied(obj):
    """A copy that shares nothing with `obj` (a model instance or a list of them)."""
    return copy.deepcopy(obj)


def write(job: Job, fields: dict) -> None:
    """Set columns of a stored job as the database would store them: JSON columns through a
    JSON round trip, times in UTC."""
    for name, value in fields.items():
        if name in _JSON_FIELDS and value is not None:
            value = json.loads(json.dumps(value))
        elif isinstance(value, datetime):
            if timezone.is_naive(value):  # as Django's DateTimeField takes it
                warnings.warn(
                    f"DateTimeField Job.{name} received a naive datetime ({value}) while time "
                    "zone support is active.",
                    RuntimeWarning,
                    stacklevel=2,
                )
                value = timezone.make_aware(value)
            value = value.astimezone(UTC)
        setattr(job, name, value)


class Store:
    def __init__(self) -> None:
        self.jobs: dict[UUID, Job] = {}
        self.parents: dict[UUID, list[UUID]] = {}  # a job -> the jobs it waits for
        self.children: defaultdict[UUID, list[UUID]] = defaultdict(list)  # and back
        self.batches: dict[UUID, Batch] = {}
        self.workflows: dict[UUID, Workflow] = {}
        self.pauses: dict[str, QueuePause] = {}
        self.reaper_runs: list[ReaperRun] = []

    # Jobs -------------------------------------------------------------------------------
    def locked(self, job_id: UUID) -> Job:
        job = self.jobs.get(job_id)
        if job is None:
            raise JobNotFound(f"no job {job_id}")
        return job

    def run(self, job: Job) -> Job | None:
        """The stored job if `job` is still Running this run (id, status and token match)."""
        if job.run_token is None:
            return None
        stored = self.jobs.get(job.id)
        if stored is None or stored.status != JobStatus.RUNNING:
            return None
        return stored if stored.run_token == job.run_token else None

    def insert(self, jobs: list[Job], now: datetime, group: Batch | Workflow | None = None):
        """Insert prepared jobs and the batch or workflow they belong to: all or nothing."""
        if isinstance(group, Batch) and group.id in self.batches:
            raise InvalidBatch(f"batch {group.id} already exists")
        if isinstance(group, Workflow) and group.id in self.workflows:
            raise InvalidWorkflow(f"workflow {group.id} already exists")
        by_id = {str(job.id): job for job in jobs}
        external = {p for job in jobs for p in job.depends_on if p not in by_id}
        missing = sorted(p for p in external if UUID(p) not in self.jobs)
        if missing:
            raise InvalidWorkflow(f"unknown dependency: {missing[0]}")
        taken = [job.id for job in jobs if job.id in self.jobs]
        if taken:
            raise InvalidJob(f"job {taken[0]} already exists")
        parents = {p: self.jobs[UUID(p)].status for p in external}
        settle_dependencies(jobs, by_id, parents, now)
        if isinstance(group, Batch):
            self.batches[group.id] = copied(group)
        elif isinstance(group, Workflow):
            self.workflows[group.id] = copied(group)
        for job in jobs:
            stored = copied(job)
            write(stored, {field.attname: getattr(job, field.attname) for field in _COLUMNS})
            self.jobs[job.id] = stored
            self.parents[job.id] = [UUID(p) for p in job.depends_on]
            for parent in self.parents[job.id]:
                self.children[parent].append(job.id)

    def delete(self, job: Job) -> None:
        """Remove a job and its edges both ways (the database's cascade)."""
        del self.jobs[job.id]
        for parent in self.parents.pop(job.id, []):
            if parent in self.children:
                self.children[parent].remove(job.id)
        for child in self.children.pop(job.id, []):
            self.parents[child].remove(job.id)

    def claimable(self, queue_name: str, now: datetime) -> list[Job]:
        """The claim's eligibility rules (see `queues/sql/`), but for the pause."""
        return [
            job
            for job in self.jobs.values()
            if job.queue_name == queue_name
            and job.status == JobStatus.PENDING
            and job.scheduled_at <= now
            and job.dependency_status in _CLAIMABLE_DEPENDENCY
            and (job.cron_schedule is None or job.recurring)
        ]

    def pick(self, queue_name: str, now: datetime, size: int, weights, rng) -> list[Job]:
        """The jobs a claim of `size` takes: strict order, or level by level in the order
        `weights` draws (drawn even when the queue is paused, as the database queue does)."""
        ready = self.claimable(queue_name, now)
        paused = queue_name in self.pauses
        if weights is None or weights.strict_priority:
            return [] if paused else sorted(ready, key=claim_key)[:size]
        order = weights.level_order({job.priority for job in ready}, rng)
        picked: list[Job] = []
        for level in [] if paused else order:
            at_level = sorted((job for job in ready if job.priority == level), key=age_key)
            picked += at_level[: size - len(picked)]
            if len(picked) >= size:
                break
        return picked

    def claim(self, job: Job, now: datetime, expires: datetime, token: UUID) -> Job:
        """Mark a picked job Running for the run `token`; returns a copy for the caller."""
        fields = {"status": JobStatus.RUNNING, "attempts": job.attempts + 1, "started_at": now}
        fields |= {"last_heartbeat_at": now, "lease_expires_at": expires, "run_token": token}
        write(job, fields)
        return copied(job)

    def complete_plain(self, jobs: list[Job], now: datetime) -> set[UUID]:
        """Complete the runs of `jobs` (one claim's) that are still theirs, with no result;
        returns the ids completed."""
        still = {job.id for job in jobs if self.run(job) is not None}
        for job_id in still:
            write(self.jobs[job_id], {**_PLAIN_COMPLETION, "completed_at": now})
        return still

    def expired_leases(self, now: datetime, queue_name: str | None) -> list[Job]:
        expired = [
            job
            for job in self.jobs.values()
            if job.status == JobStatus.RUNNING
            and job.lease_expires_at < now
            and (queue_name is None or job.queue_name == queue_name)
        ]
        return sorted(expired, key=lambda job: (job.lease_expires_at, str(job.id)))

    def in_batch(self, batch_id: UUID) -> list[Job]:
        return [job for job in self.jobs.values() if job.batch_id == batch_id]

    def fail_fast_error(self, batch_id: UUID | None) -> str | None:
        """The error for a held job of a fail-fast batch that failed meanwhile, else None."""
        batch = self.batches.get(batch_id) if batch_id else None
        if batch is None or batch.failure_mode != PartialFailureMode.FAIL_FAST:
            return None
        if batch.status != "Failed":
            return None
        failures = sorted(
            (
                job
                for job in self.in_batch(batch_id)
                if job.status in FAILURE_STATUSES
                and not (job.error_message or "").startswith(BATCH_FAILED)
            ),
            key=claim_key,
        )
        first = failures[0].id if failures else None
        return batch_failed_error(first)

    # Dependencies -----------------------------------------------------------------------
    def dependents(self, ids) -> set[UUID]:
        return {child for parent in ids for child in self.children.get(parent, [])}

    def blocked(self, ids) -> set[UUID]:
        return {
            job_id
            for job_id in ids
            if any(self.jobs[p].status != JobStatus.COMPLETED for p in self.parents.get(job_id, []))
        }

    # Jobs by match ----------------------------------------------------------------------
    def _matching(self, match: Match) -> list[Job]:
        if match.ids is not None:
            rows = (self.jobs.get(job_id) for job_id in set(match.ids))
            return [job for job in rows if job is not None and match.matches(job)]
        return [job for job in self.jobs.values() if match.matches(job)]

    def find_jobs(self, match: Match, limit: int | None = None) -> list[Job]:
        return copied(sorted(self._matching(match), key=claim_key)[:limit])

    def lock_jobs(self, match: Match) -> list[Job]:
        return copied(sorted(self._matching(match), key=lambda job: job.id))

    def update_jobs(self, match: Match, fields) -> int:
        rows = self._matching(match)
        for job in rows:
            write(job, fields)
        return len(rows)

    # Batches and workflows --------------------------------------------------------------
    def _groups(self, model) -> dict:
        return self.batches if model is Batch else self.workflows

    def get_group(self, model, group_id):
        row = self._groups(model).get(group_id)
        return None if row is None else copied(row)

    lock_group = get_group

    def update_group(self, model, group_id, fields) -> None:
        row = self._groups(model)[group_id]
        for name, value in fields.items():
            setattr(row, name, value)
