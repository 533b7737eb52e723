"""`TestQueue`: the queue in memory, on a `MockClock`, with the behaviour of `JobQueue`.

Every method holds one lock around the store, so each is atomic as a transaction of the
database queue is. The rules that both queues follow live in shared modules (`rules`,
`outcomes`, `options`, `engine.graph`'s tallies); this module and `store` only keep the rows.
"""

from __future__ import annotations

import random
import threading
import uuid
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta
from uuid import UUID

from .. import effects
from ..clock import MockClock, SystemClock
from ..enums import FAILURE_STATUSES, JobStatus
from ..exceptions import InvalidJobTransition, JobNotFound
from ..groups import BatchResult, JobBatch, JobGroup
from ..models import Job, QueuePause, ReaperRun
from ..options import DequeueOptions
from ..outcomes import (
    JobOutcome,
    RecordedOutcome,
    StaleJobRecovery,
    plan_outcome,
)
from ..queue import CANCELLED, LOST, RELEASED, STARTED
from ..rules import (
    batch_result,
    batch_row,
    check_outcome,
    check_retry_time,
    claim_key,
    fail_for_good_fields,
    note_recovery,
    on_copies,
    parse_job_id,
    positive_lease,
    prepare_jobs,
    reaper_outcome,
    reaper_run_row,
    retry_fields,
    split_finished,
    workflow_row,
)
from ..validation import validate_queue_name
from .store import Store, copied, write

_RUN_CLEARED = {
    "started_at": None,
    "last_heartbeat_at": None,
    "lease_expires_at": None,
    "run_token": None,
}


class TestQueue:
    """The in-memory queue. `clock` defaults to a `MockClock` at the real now (`.clock`);
    `reaper_runs` lists what `requeue_stale_jobs` recorded."""

    __test__ = False  # not a pytest test class

    def __init__(self, clock=None, rng: random.Random | None = None) -> None:
        self.clock = clock or MockClock()
        self.rng = rng or random.Random()
        self._store = Store()
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return f"TestQueue(now={self.now().isoformat()})"

    def now(self) -> datetime:
        return self.clock.now()

    @property
    def reaper_runs(self) -> list[ReaperRun]:
        with self._lock:
            return copied(self._store.reaper_runs)

    # Enqueue ----------------------------------------------------------------------------
    def enqueue(self, job: Job) -> UUID:
        return self.enqueue_many([job])[0]

    def enqueue_many(self, jobs: Iterable[Job]) -> list[UUID]:
        jobs = list(jobs)
        now = self.now()
        self._prepare(jobs, now)
        with self._lock:
            self._insert(jobs, now)
        return [job.id for job in jobs]

    def enqueue_workflow(self, group: JobGroup) -> UUID:
        group.validate()
        now = self.now()
        self._prepare(group.jobs, now)
        workflow = workflow_row(group, now)
        with self._lock:
            self._insert(group.jobs, now, workflow)
        return workflow.id

    def enqueue_batch(self, batch: JobBatch) -> UUID:
        batch.validate()
        now = self.now()
        self._prepare(batch.jobs, now)
        row = batch_row(batch, now)
        with self._lock:
            self._insert(batch.jobs, now, row)
        return row.id

    def _prepare(self, jobs: Sequence[Job], now: datetime) -> None:
        prepare_jobs(jobs, now, rebase=not isinstance(self.clock, SystemClock))

    def _insert(self, jobs, now, group=None) -> None:
        self._store.insert(jobs, now, group)
        changes = [(job.batch_id, job.workflow_id, None, job.status) for job in jobs]
        effects.apply_tallies(self._store, changes, now)

    # Claim ------------------------------------------------------------------------------
    def dequeue(
        self, queue_name: str, options: DequeueOptions | None = None, *, run_token=None
    ) -> list[Job]:
        """Claim up to `options.batch_size` jobs, as one run with `run_token` (default: a
        new one)."""
        options = options or DequeueOptions()
        validate_queue_name(queue_name)
        if options.batch_size == 0:
            return []
        now = self.now()
        token = run_token or uuid.uuid4()
        expires = now + options.lease_duration
        weights = options.priority_weights
        with self._lock:
            picked = self._store.pick(queue_name, now, options.batch_size, weights, self.rng)
            return [self._store.claim(job, now, expires, token) for job in picked]

    def dequeue_one(self, queue_name: str, options: DequeueOptions | None = None) -> Job | None:
        options = (options or DequeueOptions()).with_batch_size(1)
        jobs = self.dequeue(queue_name, options)
        return jobs[0] if jobs else None

    # The run ----------------------------------------------------------------------------
    def heartbeat_job(self, job: Job, lease: timedelta) -> bool:
        if job.run_token is None:
            return False
        now = self.now()
        expires = now + positive_lease(lease)
        with self._lock:
            stored = self._store.run(job)
            if stored is None:
                return False
            stored.lease_expires_at, stored.last_heartbeat_at = expires, now
        job.lease_expires_at, job.last_heartbeat_at = expires, now
        return True

    def heartbeat_jobs(self, jobs: Sequence[Job], lease: timedelta) -> int:
        """Extend the leases of many runs; returns how many were still this worker's."""
        now = self.now()
        expires = now + positive_lease(lease)
        runs = {(job.id, job.run_token): job for job in jobs if job.run_token is not None}
        extended = 0
        with self._lock:
            for job in runs.values():
                stored = self._store.run(job)
                if stored is not None:
                    stored.lease_expires_at, stored.last_heartbeat_at = expires, now
                    extended += 1
        return extended

    def release_job_run(self, job: Job) -> bool:
        """Hand an unstarted claimed job back: Pending, attempt taken back, start cleared."""
        with self._lock:
            stored = self._store.run(job)
            if stored is None:
                return False
            write(
                stored,
                {**_RUN_CLEARED, "status": JobStatus.PENDING, "attempts": stored.attempts - 1},
            )
            return True

    def start_claimed_run(self, job: Job) -> str:
        """Before a held job runs: record its actual start (fenced), and hand it back if its
        queue was paused or fail it if its fail-fast batch failed meanwhile.

        Returns STARTED, LOST (the claim is no longer this run's), RELEASED or CANCELLED.
        """
        with self._lock:
            stored = self._store.run(job)
            if stored is None:
                return LOST
            now = self.now()
            stored.started_at = stored.last_heartbeat_at = now
            job.started_at = job.last_heartbeat_at = now
            if self.is_queue_paused(job.queue_name):
                return RELEASED if self.release_job_run(job) else LOST
            error = self._store.fail_fast_error(job.batch_id)
            if error is not None:
                recorded = self.finish_job_run(job, JobOutcome.cancelled(error))
                return CANCELLED if recorded else LOST
            return STARTED

    def finish_job_run(self, job: Job, outcome: JobOutcome) -> RecordedOutcome | None:
        """Record the outcome of `job`'s run, if it is still Running this run."""
        check_outcome(outcome)
        if job.run_token is None:
            return None
        now = self.now()
        return on_copies([job], lambda jobs: self._record(jobs[0], outcome, now), self._atomic)

    def finish_job_runs(
        self, finished: Sequence[tuple[Job, JobOutcome]]
    ) -> list[RecordedOutcome | None]:
        """Record many runs' outcomes at once, as `JobQueue.finish_job_runs` does: first the
        outcomes recorded one by one, then the plain completions of each claim, then the
        dependents those completions release."""
        for _, outcome in finished:
            check_outcome(outcome)
        if not finished:
            return []
        now = self.now()
        outcomes = [outcome for _, outcome in finished]
        return on_copies(
            [job for job, _ in finished],
            lambda jobs: self._record_many(list(zip(jobs, outcomes, strict=True)), now),
            self._atomic,
        )

    def finish_and_start_runs(
        self, finished: Sequence[tuple[Job, JobOutcome]], starting: Sequence[Job]
    ) -> tuple[list[RecordedOutcome | None], list[str]]:
        """`finish_job_runs`, then `start_claimed_run` of each of `starting`, at once (as
        `JobQueue.finish_and_start_runs` does in one transaction)."""
        for _, outcome in finished:
            check_outcome(outcome)
        with self._lock:
            recorded = self.finish_job_runs(finished)
            return recorded, [self.start_claimed_run(job) for job in starting]

    def _atomic[T](self, work: Callable[[], T]) -> T:
        with self._lock:
            return work()

    def _record_many(self, finished, now: datetime) -> list[RecordedOutcome | None]:
        store = self._store
        results: list[RecordedOutcome | None] = [None] * len(finished)
        singles, plain = split_finished(finished)
        for index in singles:
            job, outcome = finished[index]
            if job.run_token is not None:  # else recorded already, under another index
                results[index] = self._record(job, outcome, now)
        completed: list[UUID] = []
        for indexes in plain.values():
            still = store.complete_plain([finished[index][0] for index in indexes], now)
            for index in indexes:
                job = finished[index][0]
                if job.id in still:
                    job.status, job.completed_at = JobStatus.COMPLETED, now
                    job.run_token = job.lease_expires_at = None
                    results[index] = RecordedOutcome(status=JobStatus.COMPLETED)
                    completed.append(job.id)
        parents = {job_id for job_id in completed if store.children.get(job_id)}
        for index, (job, _) in enumerate(finished):
            if job.id in parents and results[index] is not None:
                results[index].unblocked = effects.release_dependents(store, job.id)
        return results

    def _record(self, job: Job, outcome: JobOutcome, now: datetime) -> RecordedOutcome | None:
        store = self._store
        plan = plan_outcome(job, outcome, now, self.rng)
        stored = store.run(job)
        if stored is None:
            return None
        write(stored, plan.fields)
        return effects.record(store, job, plan, now)

    # Reaper -----------------------------------------------------------------------------
    def requeue_stale_jobs(
        self, queue_name: str | None = None, ran_by: str = ""
    ) -> StaleJobRecovery:
        """Take back Running jobs whose lease expired by the clock: Pending again, or Dead when
        their attempts are used up. Records a `ReaperRun` (see `reaper_runs`)."""
        if queue_name is not None:
            validate_queue_name(queue_name)
        recovery = StaleJobRecovery()
        now = self.now()
        with self._lock:
            for job in copied(self._store.expired_leases(now, queue_name)):
                recorded = self._record(job, reaper_outcome(job, now), now)
                if recorded is not None:
                    note_recovery(recovery, job.id, recorded)
            run = reaper_run_row(recovery, now, ran_by, queue_name)
            run.id = len(self._store.reaper_runs) + 1
            self._store.reaper_runs.append(run)
        return recovery

    # Pause ------------------------------------------------------------------------------
    def pause_queue(self, queue_name: str, paused_by: str | None = None, reason: str | None = None):
        validate_queue_name(queue_name)
        pause = QueuePause(
            queue_name=queue_name, paused_at=self.now(), paused_by=paused_by, reason=reason
        )
        with self._lock:
            self._store.pauses[queue_name] = pause

    def resume_queue(self, queue_name: str, resumed_by: str | None = None) -> None:
        validate_queue_name(queue_name)
        with self._lock:
            self._store.pauses.pop(queue_name, None)

    def is_queue_paused(self, queue_name: str) -> bool:
        with self._lock:
            return queue_name in self._store.pauses

    # Operators --------------------------------------------------------------------------
    def get_job(self, job_id: UUID | str) -> Job | None:
        job_id = parse_job_id(job_id)
        with self._lock:
            job = self._store.jobs.get(job_id)
            return None if job is None else copied(job)

    def enable_recurring_job(self, job_id: UUID | str) -> None:
        self._set_recurring(job_id, True)

    def disable_recurring_job(self, job_id: UUID | str) -> None:
        self._set_recurring(job_id, False)

    def _set_recurring(self, job_id, enabled: bool) -> None:
        job_id = parse_job_id(job_id)
        with self._lock:
            job = self._store.locked(job_id)
            if not job.cron_schedule:
                raise InvalidJobTransition(f"job {job.id} is not a recurring job")
            job.recurring = enabled

    def retry_job(self, job_id: UUID | str, at: datetime | None = None) -> None:
        """Back to Pending, scheduled at `at` (default now). A terminal job gets its attempts
        back; a Running job's current run is fenced out."""
        check_retry_time(at)
        now = self.now()
        job_id = parse_job_id(job_id)
        with self._lock:
            job = self._store.locked(job_id)
            fields = retry_fields(job, at or now, lambda: bool(self._store.blocked([job.id])))
            old = job.status
            write(job, fields)
            change = (job.batch_id, job.workflow_id, old, JobStatus.PENDING)
            effects.apply_tallies(self._store, [change], now)

    def cancel_job(self, job_id: UUID | str, reason: str = "Cancelled by an operator") -> None:
        """Fail a Pending or Running job for good (a running handler's outcome is then
        discarded); its dependents, workflow and fail-fast batch react as to any failure."""
        self._fail_for_good(job_id, JobStatus.FAILED, reason)

    def mark_job_dead(self, job_id: UUID | str, reason: str = "Marked dead by an operator") -> None:
        self._fail_for_good(job_id, JobStatus.DEAD, reason)

    def _fail_for_good(self, job_id, status: JobStatus, reason: str) -> None:
        now = self.now()
        job_id = parse_job_id(job_id)
        with self._lock:
            job = self._store.locked(job_id)
            fields = fail_for_good_fields(job, status, reason, now)
            old = job.status
            write(job, fields)
            _, more = effects.after_terminal_failure(self._store, job, now)
            changes = [(job.batch_id, job.workflow_id, old, status), *more]
            effects.apply_tallies(self._store, changes, now)

    def delete_job(self, job_id: UUID | str) -> None:
        """Delete a job that is not Running (and its dependency edges)."""
        now = self.now()
        job_id = parse_job_id(job_id)
        with self._lock:
            job = self._store.locked(job_id)
            if job.status == JobStatus.RUNNING:
                raise InvalidJobTransition(f"job {job.id} is Running; cancel it first")
            orphans = self._store.dependents([job.id])
            self._store.delete(job)
            effects.release_waiting(self._store, orphans)
            change = (job.batch_id, job.workflow_id, job.status, None)
            effects.apply_tallies(self._store, [change], now)

    # Reads ------------------------------------------------------------------------------
    def get_job_counts_by_status(self, queue_name: str) -> dict[str, int]:
        counts = dict.fromkeys(JobStatus.values, 0)
        with self._lock:
            for job in self._store.jobs.values():
                if job.queue_name == queue_name:
                    counts[job.status] += 1
        return counts

    def get_all_jobs(self) -> list[Job]:
        """Every job of every queue, oldest first (TestQueue only, as in Hammerwork)."""
        with self._lock:
            jobs = self._store.jobs.values()
            return copied(sorted(jobs, key=_listing_key))

    def get_batch_jobs(self, batch_id: UUID | str) -> list[Job]:
        batch_id = parse_job_id(batch_id)
        with self._lock:
            jobs = self._store.in_batch(batch_id)
            return copied(sorted(jobs, key=_listing_key))

    def get_batch_status(self, batch_id: UUID | str) -> BatchResult:
        batch_id = parse_job_id(batch_id)
        with self._lock:
            batch = self._store.batches.get(batch_id)
            if batch is None:
                raise JobNotFound(f"no batch {batch_id}")
            errors = {}
            if batch.failed_jobs:
                failed = [j for j in self._store.in_batch(batch_id) if j.status in FAILURE_STATUSES]
                errors = {j.id: j.error_message for j in sorted(failed, key=claim_key)[:1000]}
            return batch_result(batch, errors)


def _listing_key(job: Job):
    return (job.created_at, str(job.id))
