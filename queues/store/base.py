"""The storage interface under `JobQueue`: what a store does, one operation at a time.

`JobQueue` holds every rule and every effect, written once; a store only reads and writes rows. Two
stores implement this protocol: the SQL store (`engine.sql`, with one small module per vendor beside
it around its catalogue `queues/store/catalogue/<vendor>.sql`) and the memory store (`memory.store`,
under `TestQueue`). The conformance suite (`tests/queues/store/`) holds both to the contracts below,
as River's driver suite holds its drivers.

Rules of every store:
- Each operation is atomic by itself; `atomic` makes several one transaction.
- "Fenced" operations touch only runs still Running with the given token: a stale run
  changes nothing, and the answer says which runs were still theirs.
- What a store hands out is the caller's (changing it changes nothing stored), and the
  store takes no reference to what it is given.
- A "claimable" job is Pending, due (`scheduled_at <= now`), waits for no unfinished
  dependency and is not a disabled recurring job; a claim takes none from a paused queue.
  A claimed job is Running: attempts + 1, started and heartbeated `now`, leased, with the
  run's token.
- "Locked" rows stay locked until the transaction ends, taken in id order so that
  concurrent transactions never deadlock on them. The store's id order need not be
  Python's (MariaDB compares its native UUIDs from the last group): where the order of an
  answer matters, the queue sorts it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol
from uuid import UUID

from queues.models import Batch, FailedAttempt, Job, QueueConfig, QueuePause, ReaperRun, Workflow

#: A batch or a workflow: the rows that tally jobs.
Group = Batch | Workflow


def claim_key(job: Job):
    """The claim order: highest priority, then oldest, then id."""
    return (-job.priority, job.scheduled_at, str(job.id))


def age_key(job: Job):
    """The claim order within one priority level."""
    return (job.scheduled_at, str(job.id))


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


class Store(Protocol):
    """Every operation of a store. Those of runs are fenced: they touch only runs of `ids`
    still Running with `token`, and answer for those."""

    #: The strict claim is one statement, atomic without a transaction of its own.
    claim_is_one_statement: bool

    # Transactions -------------------------------------------------------------------------
    def atomic[T](self, fn: Callable[[], T], *, single_statement: bool = False) -> T:
        """Run `fn` in one transaction (or in the caller's), again after a lock conflict;
        with `single_statement` it may run without a transaction of its own."""

    def on_commit(self, fn: Callable[[], None]) -> None:
        """Call `fn` once the open transaction commits (never if it rolls back); at once
        outside a transaction."""

    # Claims -------------------------------------------------------------------------------
    def claimable_levels(self, queue: str, now: datetime) -> list[int]:
        """The priority levels of `queue` with a claimable job at `now` (pause not asked)."""

    def next_due(self, queue: str) -> datetime | None:
        """The earliest `scheduled_at` of a job of `queue` that is claimable or will be by
        time alone; None if it has none or is paused. Reads only."""

    def data_version(self) -> int | None:
        """A number that changes when another connection commits (None: the store cannot
        tell cheaply); read on this thread's connection."""

    def claim(self, params: ClaimParams) -> list[Job]:
        """Claim the first claimable jobs (claim order) for `params`; in any order."""

    def lock_queue_limit(self, queue: str) -> QueueConfig | None:
        """Lock the queue's configuration row until the transaction ends and return it
        (None: no row); a limited claim's first statement."""

    def spend_rate_tokens(self, queue: str, tokens: int, refilled_at: datetime) -> None:
        """Write what is left of the queue's rate bucket, of the window that starts at
        `refilled_at` (inside the claim that locked the row)."""

    def count_running(self, queue: str) -> int:
        """How many of the queue's jobs are Running (claimed, started or not)."""

    # Runs (fenced) ------------------------------------------------------------------------
    def start_runs(
        self, ids: Sequence[UUID], token: UUID, now: datetime
    ) -> dict[UUID, tuple[bool, bool]]:
        """Mark the runs started `now`: {id: (queue paused, fail-fast batch failed)}."""

    def startable_runs(self, ids: Collection[UUID]) -> dict[UUID, UUID]:
        """The run token of each of `ids` that is Running in a queue not paused and not in a
        failed fail-fast batch (one read, no lock): the held jobs of those tokens may start
        without a start marker."""

    def complete_runs(
        self, ids: Sequence[UUID], token: UUID, now: datetime, results: Sequence | None = None
    ) -> dict[UUID, bool]:
        """Complete the runs (lease and token cleared), each with the result at its place in
        `results` (None, or no `results`: no result): {id: it has dependents}."""

    def lock_runs(self, ids: Sequence[UUID], token: UUID) -> dict[UUID, bool]:
        """Lock the runs until the transaction ends: {id: it has dependents}. The fence of
        outcomes written with `update_each`."""

    def update_each(self, rows: Mapping[UUID, Mapping[str, Any]]) -> None:
        """Set each job's own `fields` ({id: fields}, the same names in every row) in one
        write, unfenced: the caller holds their locks (`lock_runs`)."""

    def update_runs(self, ids: Sequence[UUID], token: UUID, fields: Mapping[str, Any]) -> int:
        """The fenced write: set `fields` on the runs still Running with `token`; how many."""

    def release_runs(self, ids: Sequence[UUID], token: UUID) -> int:
        """Hand the runs back: Pending, attempt given back, run cleared; how many."""

    def lock_expired_leases(
        self, now: datetime, queue: str | None, limit: int
    ) -> list[tuple[UUID, UUID]]:
        """Lock up to `limit` runs whose lease expired before `now`, earliest first, skipping
        locked rows: [(id, run token)]."""

    def running_tokens(self, ids: Collection[UUID]) -> dict[UUID, UUID]:
        """The run token of each of `ids` that is Running (one read, no lock)."""

    # Jobs ---------------------------------------------------------------------------------
    def insert_jobs(self, jobs: Sequence[Job]) -> None:
        """Insert jobs and their dependency edges; a taken id or unique slot raises
        `IntegrityError` and inserts none of them (inside a transaction too, which goes on)."""

    def replace_tags(self, job: Job) -> None:
        """Make the job's tag rows its `tags`, of its queue (a declared schedule's row whose
        entry changed: the only job whose tags change)."""

    def find_jobs(self, match: Match, limit: int | None = None) -> list[Job]:
        """The matching jobs in claim order (the first `limit`)."""

    def lock_jobs(self, match: Match) -> list[Job]:
        """Lock the matching jobs (in the store's id order) and return them, in any order."""

    def update_jobs(self, match: Match, fields: Mapping[str, Any]) -> int:
        """Set `fields` on the matching jobs (unfenced: the caller holds their locks)."""

    def delete_jobs(self, match: Match) -> int:
        """Delete the matching jobs, their dependency edges both ways and their error
        history; how many jobs."""

    def count_jobs(self, queue: str) -> dict[str, int]:
        """Exact counts of `queue`'s jobs by status (every status, zeros included)."""

    def declared_jobs(self) -> list[Job]:
        """Every job that has a schedule name (a declared schedule's), without a scan of the
        jobs table: they are recurring jobs."""

    # The error history --------------------------------------------------------------------
    def insert_attempts(self, rows: Sequence[FailedAttempt]) -> None:
        """Insert history rows of existing jobs, in one statement (up to 500 rows)."""

    def find_attempts(self, job_id: UUID) -> list[FailedAttempt]:
        """The job's history rows, in the order they were inserted."""

    def update_attempt(self, job_id: UUID, token: UUID, fields: Mapping[str, Any]) -> int:
        """Set `fields` on the history rows of the job's run `token`; how many."""

    # Dependencies -------------------------------------------------------------------------
    def dependents(self, ids: Collection[UUID]) -> set[UUID]:
        """The jobs that wait for any of `ids`."""

    def dependents_of(self, ids: Collection[UUID]) -> dict[UUID, set[UUID]]:
        """{parent: the jobs that wait for it} of those of `ids` that have dependents (one
        read for a claim's completions)."""

    def blocked(self, ids: Collection[UUID]) -> set[UUID]:
        """Those of `ids` that wait for a job that is not Completed."""

    # Batches and workflows ----------------------------------------------------------------
    def insert_group(self, row: Group) -> None:
        """Insert a batch or workflow row; an id that is taken raises `IntegrityError`."""

    def get_group(self, model: type[Group], group_id: UUID) -> Group | None:
        """The batch or workflow row, or None."""

    def lock_group(self, model: type[Group], group_id: UUID) -> Group | None:
        """The batch or workflow row, locked."""

    def update_group(self, model: type[Group], group_id: UUID, fields: Mapping[str, Any]):
        """Set `fields` on the batch or workflow row (the caller holds its lock)."""

    def first_failure(self, batch_id: UUID, excluding: str) -> UUID | None:
        """The batch's first failure (claim order) whose error does not start `excluding`."""

    # Pauses -------------------------------------------------------------------------------
    def pause(self, row: QueuePause) -> None:
        """Pause the row's queue, or update who paused it, when and why."""

    def resume(self, queue: str) -> None:
        """Take the queue's pause away (none: nothing)."""

    def is_paused(self, queue: str) -> bool:
        """Whether the queue has a pause row."""

    # Queue configurations -----------------------------------------------------------------
    def get_queue_config(self, queue: str) -> QueueConfig | None:
        """The queue's configuration row, or None (one read, no lock)."""

    def set_queue_config(self, queue: str, fields: Mapping) -> QueueConfig:
        """Insert the queue's row with `fields`, or update those fields of its row (the
        others stay); the row as written."""

    # Reaper runs --------------------------------------------------------------------------
    def insert_reaper_run(self, row: ReaperRun) -> None:
        """Record what a pass of the reaper did."""
