"""Which jobs a store operation reaches: a `Match` of columns, a `Selection` (a rule stated as a
queryset and as a test of one row), the parameters of a claim and the claim order. Values the
`Store` protocol (`queues.store.base`) takes; they hold no rows. See docs/design/store.md."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol
from uuid import UUID

from django.db.models import QuerySet

from queues.models import Batch, Job, Workflow

#: A batch or a workflow: the rows that tally jobs.
Group = Batch | Workflow


def claim_key(job: Job):
    """The claim order: highest priority level, then highest `task_priority` within it (a
    django.tasks task's own priority; 0 for other jobs), then oldest, then id."""
    return (-job.priority, -job.task_priority, job.scheduled_at, str(job.id))


def age_key(job: Job):
    """The claim order within one priority level."""
    return (-job.task_priority, job.scheduled_at, str(job.id))


@dataclass(frozen=True, slots=True, kw_only=True)
class ClaimParams:
    """One claim: up to `limit` claimable jobs of `queue` (of level `priority`, if given)
    become Running for the run `token`, leased until `lease_expires_at`, stamped with the
    worker process `claimed_by` (None: no process)."""

    queue: str
    limit: int
    now: datetime
    lease_expires_at: datetime
    token: UUID
    priority: int | None = None
    claimed_by: UUID | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Match:
    """Which jobs an operation reaches: every field given must match (None matches any)."""

    ids: Collection[UUID] | None = None
    queue_name: str | None = None
    status: str | Collection[str] | None = None
    run_token: UUID | None = None
    batch_id: UUID | None = None
    workflow_id: UUID | None = None
    dependency_status: str | None = None
    claimed_by: UUID | None = None
    #: The jobs whose unique slot is one of these (see `queues.engine.unique`).
    unique_slots: Collection[str] | None = None
    #: The jobs that have this tag (see `queues.tags`).
    tag: str | None = None

    def __post_init__(self) -> None:
        if self.ids is not None and not isinstance(self.ids, frozenset):
            object.__setattr__(self, "ids", frozenset(self.ids))
        if self.unique_slots is not None and not isinstance(self.unique_slots, frozenset):
            object.__setattr__(self, "unique_slots", frozenset(self.unique_slots))

    def statuses(self) -> Collection[str] | None:
        return (self.status,) if isinstance(self.status, str) else self.status

    def matches(self, job: Job) -> bool:
        statuses = self.statuses()
        return (
            (self.ids is None or job.id in self.ids)
            and (self.queue_name is None or job.queue_name == self.queue_name)
            and (statuses is None or job.status in statuses)
            and (self.run_token is None or job.run_token == self.run_token)
            and (self.batch_id is None or job.batch_id == self.batch_id)
            and (self.workflow_id is None or job.workflow_id == self.workflow_id)
            and (self.dependency_status is None or job.dependency_status == self.dependency_status)
            and (self.claimed_by is None or job.claimed_by == self.claimed_by)
            and (self.unique_slots is None or job.unique_slot in self.unique_slots)
            and (self.tag is None or self.tag in job.tags)
        )


class Selection(Protocol):
    """Jobs chosen by a rule that a `Match` cannot state (a purge's age, the pruner's, the
    dashboard's search), written where the rule belongs, twice side by side: as a queryset
    (the SQL store's) and as a test of one row (the memory store's)."""

    def rows(self, using: str) -> QuerySet:
        """The selected jobs of the database `using`."""
        ...

    def matches(self, job: Job) -> bool:
        """Whether the selection holds `job` (a stored row: the test must not change it)."""
        ...
