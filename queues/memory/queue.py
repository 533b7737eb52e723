"""`TestQueue`: the queue in memory, on a `MockClock`, with the behaviour of `JobQueue`.

Every method holds one lock around the store, so each is atomic as a transaction of the
database queue is. The rules that both queues follow live in shared modules (`rules`,
`outcomes`, `options`, `engine.graph`'s tallies); this module and `store` only keep the rows.
"""

from __future__ import annotations

import random
import threading
import uuid
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from uuid import UUID

from ..clock import MockClock, SystemClock
from ..engine.graph import Change
from ..enums import FAILURE_STATUSES, DependencyStatus, JobStatus
from ..exceptions import InvalidJob, InvalidJobTransition, JobNotFound
from ..groups import BatchResult, JobBatch, JobGroup
from ..models import Batch, Job, QueuePause, ReaperRun, Workflow
from ..options import DequeueOptions
from ..outcomes import (
    LEASE_EXPIRED_ERROR,
    JobOutcome,
    RecordedOutcome,
    StaleJobRecovery,
    plan_outcome,
)
from ..queue import CANCELLED, LOST, RELEASED, STARTED
from ..rules import (
    age_key,
    check_outcome,
    claim_key,
    parse_job_id,
    positive_lease,
    prepare_jobs,
)
from ..validation import validate_queue_name
from .store import Store, copied, write

_RUN_CLEARED = {"started_at": None, "last_heartbeat_at": None, "lease_expires_at": None,
                "run_token": None}


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
            self._store.insert(jobs, now)
        return [job.id for job in jobs]

    def enqueue_workflow(self, group: JobGroup) -> UUID:
        group.validate()
        now = self.now()
        self._prepare(group.jobs, now)
        workflow = Workflow(
            id=group.id, name=group.name, failure_policy=group.failure_policy, created_at=now
        )
        for job in group.jobs:
            job.workflow_id = workflow.id
        with self._lock:
            self._store.insert(group.jobs, now, workflow)
        return workflow.id

    def enqueue_batch(self, batch: JobBatch) -> UUID:
        batch.validate()
        now = self.now()
        self._prepare(batch.jobs, now)
        row = Batch(
            id=batch.id,
            name=batch.name,
            failure_mode=batch.partial_failure_mode,
            metadata=batch.metadata,
            created_at=now,
        )
        for job in batch.jobs:
            job.batch_id = row.id
        with self._lock:
            self._store.insert(batch.jobs, now, row)
        return row.id

    def _prepare(self, jobs: Sequence[Job], now: datetime) -> None:
        prepare_jobs(jobs, now, rebase=not isinstance(self.clock, SystemClock))

    # Claim ------------------------------------------------------------------------------
    def dequeue(self, queue_name: str, options: DequeueOptions | None = None) -> list[Job]:
        options = options or DequeueOptions()
        validate_queue_name(queue_name)
        size = options.batch_size
        if size == 0:
            return []
        now = self.now()
        token = uuid.uuid4()
        expires = now + options.lease_duration
        weights = options.priority_weights
        with self._lock:
            ready = self._store.claimable(queue_name, now)
            paused = queue_name in self._store.pauses
            if weights is None or weights.strict_priority:
                picked = [] if paused else sorted(ready, key=claim_key)[:size]
            else:
                # The levels are ordered (drawing from the rng) even when the queue is
                # paused, as the database queue does.
                order = weights.level_order({job.priority for job in ready}, self.rng)
                picked = []
                for level in [] if paused else order:
                    at_level = sorted((j for j in ready if j.priority == level), key=age_key)
                    picked += at_level[: size - len(picked)]
                    if len(picked) >= size:
                        break
            claimed = []
            for job in picked:
                write(job, {"status": JobStatus.RUNNING, "attempts": job.attempts + 1,
                            "started_at": now, "last_heartbeat_at": now,
                            "lease_expires_at": expires, "run_token": token})
                claimed.append(copied(job))
            return claimed

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
            write(stored, {**_RUN_CLEARED, "status": JobStatus.PENDING,
                           "attempts": stored.attempts - 1})
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
        with self._lock:
            return self._record(job, outcome, now)

    def _record(self, job: Job, outcome: JobOutcome, now: datetime) -> RecordedOutcome | None:
        store = self._store
        plan = plan_outcome(job, outcome, now, self.rng)
        stored = store.run(job)
        if stored is None:
            return None
        write(stored, plan.fields)
        for name, value in plan.fields.items():
            setattr(job, name, value)
        recorded = RecordedOutcome(status=plan.status, next_run_at=plan.next_run_at)
        changes: list[Change] = [(job.batch_id, job.workflow_id, JobStatus.RUNNING, plan.status)]
        if plan.completed:
            recorded.unblocked = store.release_dependents(job.id)
        if plan.terminal_failure:
            recorded.cancelled, more = store.after_terminal_failure(job, now)
            changes += more
        store.apply_tallies(changes, now)
        return recorded

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
                if job.attempts >= job.max_attempts:
                    outcome = JobOutcome.dead(LEASE_EXPIRED_ERROR)
                else:
                    outcome = JobOutcome.retry(now, LEASE_EXPIRED_ERROR)
                recorded = self._record(job, outcome, now)
                if recorded is None:
                    continue
                if recorded.status == JobStatus.DEAD:
                    recovery.dead.append(job.id)
                else:
                    recovery.requeued.append(job.id)
            runs = self._store.reaper_runs
            runs.append(ReaperRun(
                id=len(runs) + 1,
                ran_at=now,
                ran_by=ran_by[:255],
                queue_name=queue_name,
                requeued_ids=[str(i) for i in recovery.requeued],
                dead_ids=[str(i) for i in recovery.dead],
            ))
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
        if at is not None and (not isinstance(at, datetime) or at.tzinfo is None):
            raise InvalidJob("retry time must be a timezone-aware datetime")
        now = self.now()
        job_id = parse_job_id(job_id)
        with self._lock:
            job = self._store.locked(job_id)
            if job.status in (JobStatus.COMPLETED, JobStatus.ARCHIVED) and not job.cron_schedule:
                raise InvalidJobTransition(f"job {job.id} is {job.status}; it cannot be retried")
            old = job.status
            fields = {**_RUN_CLEARED, "status": JobStatus.PENDING, "scheduled_at": at or now}
            if old in FAILURE_STATUSES:
                fields.update(attempts=0, failed_at=None, timed_out_at=None)
            if job.dependency_status == DependencyStatus.FAILED:
                blocked = self._store.blocked(job.id)
                fields["dependency_status"] = (
                    DependencyStatus.WAITING if blocked else DependencyStatus.SATISFIED
                )
            write(job, fields)
            change = (job.batch_id, job.workflow_id, old, JobStatus.PENDING)
            self._store.apply_tallies([change], now)

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
            if job.status not in (JobStatus.PENDING, JobStatus.RUNNING, JobStatus.RETRYING):
                raise InvalidJobTransition(f"job {job.id} is {job.status}, not Pending or Running")
            old = job.status
            write(job, {"status": status, "error_message": reason, "failed_at": now,
                        "run_token": None, "lease_expires_at": None, "recurring": False})
            _, changes = self._store.after_terminal_failure(job, now)
            self._store.apply_tallies([(job.batch_id, job.workflow_id, old, status), *changes], now)

    def delete_job(self, job_id: UUID | str) -> None:
        """Delete a job that is not Running (and its dependency edges)."""
        now = self.now()
        job_id = parse_job_id(job_id)
        with self._lock:
            job = self._store.locked(job_id)
            if job.status == JobStatus.RUNNING:
                raise InvalidJobTransition(f"job {job.id} is Running; cancel it first")
            self._store.delete(job)
            self._store.apply_tallies([(job.batch_id, job.workflow_id, job.status, None)], now)

    # Reads ------------------------------------------------------------------------------
    def get_job_counts_by_status(self, queue_name: str) -> dict[str, int]:
        counts = dict.fromkeys(JobStatus.values, 0)
        with self._lock:
            for job in self._store.jobs.values():
                if job.queue_name == queue_name:
                    counts[job.status] += 1
        return counts

    def get_batch_jobs(self, batch_id: UUID | str) -> list[Job]:
        batch_id = parse_job_id(batch_id)
        with self._lock:
            jobs = self._store.in_batch(batch_id)
            return copied(sorted(jobs, key=lambda job: (job.created_at, str(job.id))))

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
            return BatchResult(
                batch_id=batch.id,
                status=batch.status,
                total_jobs=batch.total_jobs,
                completed_jobs=batch.completed_jobs,
                failed_jobs=batch.failed_jobs,
                pending_jobs=batch.pending_jobs,
                created_at=batch.created_at,
                completed_at=batch.completed_at,
                job_errors=errors,
            )
