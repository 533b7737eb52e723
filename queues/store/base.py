"""The `Store` protocol under `JobQueue`: every operation of a store, declared once here with
its contract. `JobQueue` holds every rule and effect; a store only reads and writes rows. The
SQL store (`queues.store.sql`) and the memory store (`queues.store.memory`) implement it,
and the conformance suite (`tests/queues/store/`) holds both to it. See docs/design/store.md."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Protocol
from uuid import UUID

from queues.models import (
    ArchivedJob,
    BulkOperation,
    FailedAttempt,
    Job,
    QueueConfig,
    QueuePause,
    ReaperRun,
    WorkerProcess,
)
from queues.store.match import ClaimParams, Group, Match, Selection, age_key, claim_key

__all__ = ["ClaimParams", "Group", "Match", "Selection", "Store", "age_key", "claim_key"]

#: The tables of `Store.prune_rows`; the last three (the counters) exist in SQL only.
PRUNED_TABLES = ("failed_attempts", "reaper_runs", "worker_processes", "completion_counts",
                 "attempt_counts", "hourly_counts")  # fmt: skip


class Store(Protocol):
    """Every operation of a store. The rules of each:
    - Each operation is atomic by itself; `atomic` makes several one transaction.
    - "Fenced" operations (those of runs) touch only runs of `ids` still Running with the
      given token: a stale run changes nothing, and the answer says which were still theirs.
    - What a store hands out is the caller's (changing it changes nothing stored), and the
      store takes no reference to what it is given.
    - A "claimable" job is Pending, due (`scheduled_at <= now`), waits for no unfinished
      dependency and is not a disabled recurring job; a claim takes none from a paused
      queue. A claimed job is Running: attempts + 1, started and heartbeated `now`, leased,
      with the run's token.
    - "Locked" rows stay locked until the transaction ends, taken in id order so that
      concurrent transactions never deadlock on them. The store's id order need not be
      Python's (MariaDB compares its native UUIDs from the last group): where the order of
      an answer matters, the queue sorts it."""

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

    def next_due_many(self, queues: Sequence[str]) -> dict[str, datetime | None]:
        """`next_due` of each of `queues`, read together (one statement in SQL)."""

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
        self, runs: Sequence[tuple[UUID, UUID, Any]], now: datetime
    ) -> dict[UUID, bool]:
        """Complete the runs of `runs` ((id, token, result) of any claims; a result of None:
        none) that are still theirs, lease and token cleared: {id: it has dependents}."""

    def complete_free_runs(
        self, runs: Sequence[tuple[UUID, UUID, Any]], now: datetime, check: Collection[UUID] = ()
    ) -> tuple[set[UUID] | None, dict[UUID, UUID]]:
        """A worker's usual write, in autocommit: complete the runs of `runs` ((id, token,
        result) of any claims) that are still theirs and have no dependents, and read which
        held jobs of `check` may start (as `startable_runs`, begun after the write was
        asked). The ids written (None: the vendor cannot tell them from one statement; the
        caller completes them with `complete_runs` in a transaction), and the startable."""

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

    # Selections (`match.Selection`: a rule a `Match` cannot state) ------------------------
    def select_ids(
        self,
        selection: Selection,
        *,
        among: Collection[UUID] | None = None,
        after: UUID | str | None = None,
        limit: int | None = None,
    ) -> list[UUID]:
        """The ids of the jobs `selection` holds (of `among` only, if given), in the store's
        id order: those after the id `after`, the first `limit`. One read, no lock."""

    def count_selected(self, selection: Selection) -> int:
        """How many jobs `selection` holds."""

    def delete_selected(self, selection: Selection, limit: int) -> int:
        """Delete up to `limit` of the jobs `selection` holds, with their edges and history
        as `delete_jobs` deletes them (no dependent released, no tally changed: the pruner's
        old finished jobs), each asked again as it is deleted; how many (fewer than `limit`:
        it found no more, or some changed meanwhile)."""

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

    def fail_fast_batches(self, ids: Collection[UUID]) -> set[UUID]:
        """Those of the batches `ids` whose failure mode is fail-fast (one read)."""

    def update_group(self, model: type[Group], group_id: UUID, fields: Mapping[str, Any]):
        """Set `fields` on the batch or workflow row (the caller holds its lock)."""

    def delete_group(self, model: type[Group], group_id: UUID) -> None:
        """Delete the batch or workflow row, and the jobs still in it as `delete_jobs` does
        (the foreign key's cascade; the engine deletes them first, with their effects)."""

    def first_failure(self, batch_id: UUID, excluding: str) -> UUID | None:
        """The batch's first failure (claim order) whose error does not start `excluding`."""

    def finished_groups(self, cutoff: datetime) -> list[Group]:
        """The batches and workflows that finished before `cutoff` and whose jobs all
        finished (`queues.store.finished`): what a purge deletes whole. One read, no lock."""

    # The archive (`queues.store.archived`: its rule and its rows) -------------------------
    def archive_selected(self, selection: Selection, limit: int, now: datetime) -> list[UUID]:
        """Move up to `limit` of the jobs `selection` (an `Archivable`) holds to the archive,
        archived `now`, with their history and their dependents' ids, and delete them with
        their edges, history and tags; their ids (fewer than `limit`: no more were free).
        Rows another archiver holds are skipped, not waited for."""

    def restore_archived(self, ids: Collection[UUID]) -> list[UUID]:
        """Put those of `ids` that are archived back in the jobs table as they were (their
        history, tags and the edges to jobs still there; a group or unique slot gone
        meanwhile left off), counted as jobs again but not as new completions or failures;
        their ids. An id archived but in the jobs table too is left."""

    def get_archived(self, job_id: UUID) -> ArchivedJob | None:
        """The job's archive row, or None (one read, no lock)."""

    def vacuum_jobs(self) -> None:
        """Reclaim the space of many deleted jobs where the database needs telling
        (PostgreSQL: VACUUM ANALYZE of the jobs table); outside a transaction."""

    # Pauses -------------------------------------------------------------------------------
    def pause(self, row: QueuePause) -> None:
        """Pause the row's queue, or update who paused it, when and why."""

    def resume(self, queue: str) -> None:
        """Take the queue's pause away (none: nothing)."""

    def is_paused(self, queue: str) -> bool:
        """Whether the queue has a pause row."""

    def get_pause(self, queue: str) -> QueuePause | None:
        """The queue's pause row (who paused it, when, why), or None (one read, no lock)."""

    # Queue configurations -----------------------------------------------------------------
    def get_queue_config(self, queue: str) -> QueueConfig | None:
        """The queue's configuration row, or None (one read, no lock)."""

    def set_queue_config(self, queue: str, fields: Mapping) -> QueueConfig:
        """Insert the queue's row with `fields`, or update those fields of its row (the
        others stay); the row as written."""

    # Reaper runs --------------------------------------------------------------------------
    def insert_reaper_run(self, row: ReaperRun) -> None:
        """Record what a pass of the reaper did."""

    # Worker processes (a `runworker`'s row: `workers.process.host`) -----------------------
    def register_process(self, row: WorkerProcess) -> None:
        """Insert a worker process's row as given (its heartbeat included); an id that is
        taken raises `IntegrityError`."""

    def beat_process(
        self, process_id: UUID, held: int, running: int, processed: int, at: datetime
    ) -> bool:
        """Write the process's heartbeat `at` and its counts of jobs held, running and
        processed; False: it has no row (pruned while it was away), and nothing is written."""

    def unregister_process(self, process_id: UUID) -> None:
        """Delete the process's row (none: nothing)."""

    def get_process(self, process_id: UUID) -> WorkerProcess | None:
        """The process's row, or None (one read, no lock)."""

    def live_processes(self, since: datetime, limit: int) -> list[WorkerProcess]:
        """The processes whose last heartbeat is at or after `since`, newest heartbeat first
        (the first `limit`; one read of the heartbeat's index, no lock)."""

    # Upkeep: what the pruner deletes ------------------------------------------------------
    def prune_rows(self, table: str, before: datetime, limit: int) -> int:
        """Delete up to `limit` rows of `table` (one of `PRUNED_TABLES`) older than `before`;
        how many (fewer than `limit`: it found no more). "failed_attempts" is the error
        history (by failed_at), "reaper_runs" by ran_at, "worker_processes" by their last
        heartbeat, and the trigger-kept counters "completion_counts", "attempt_counts" (by
        minute) and "hourly_counts" (by hour). The counters exist in SQL only (the
        database's triggers write them): the memory store has none, and deletes none."""

    def roll_up_counts(self, now: datetime, kept: timedelta) -> int:
        """Roll the closed hours of the per-minute counters up into hourly rows, before the
        minutes older than `kept` are pruned (`queues.store.counters.rollup`); how many
        rows. SQL only: the memory store keeps no counters, and rolls up none (0)."""

    # Bulk operations (`queues.ops.bulk`) --------------------------------------------------
    def insert_bulk(self, row: BulkOperation) -> None:
        """Insert an operation's row; its new id is set on `row`."""

    def get_bulk(self, op_id: int) -> BulkOperation | None:
        """The operation's row, or None (one read, no lock)."""

    def lock_bulk(self, op_id: int) -> BulkOperation | None:
        """The operation's row, locked until the transaction ends, or None."""

    def update_bulk(self, op_id: int, fields: Mapping[str, Any], status: str | None = None) -> int:
        """Set `fields` on the operation's row if its status is `status` (None: any); how
        many rows (0 or 1)."""

    def claim_bulk(
        self, ran_by: str, now: datetime, lease_expires_at: datetime
    ) -> BulkOperation | None:
        """Take the oldest free operation (pending; running with a lease that expired before
        `now`; running for `ran_by` already): running for `ran_by`, leased until
        `lease_expires_at`, started `now` unless it had started. It, or None. A conditional
        write: of concurrent claims of one operation, one takes it."""
