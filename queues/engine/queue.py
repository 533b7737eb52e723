"""`JobQueue`: the queue's orchestration, written once over a store (`engine.base.Store`): on
one Django database (PostgreSQL, MySQL/MariaDB or SQLite) through the SQL store, in memory
through `TestQueue`'s.

Every method is one transaction (or one statement). The rules are pure modules (`validation`,
`outcomes`, `groups`, `tallies`), what a write does to the jobs around it is `effects`, and
the writes of runs are `runs`; the store only reads and writes rows.
"""

from __future__ import annotations

import random
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import replace
from datetime import UTC, datetime
from uuid import UUID

from django.db import IntegrityError

from queues import signals
from queues.clock import SYSTEM_CLOCK
from queues.engine import (
    effects,
    history,
    limits,
    operator_batches,
    schedule_sync,
    transitions,
    unique,
)
from queues.engine.deletion import JobDeletion
from queues.engine.enqueue import Enqueues
from queues.engine.limits import Limits
from queues.engine.operator_batches import RETRIED_RUNNING, JobsActed
from queues.engine.outcomes import (
    StaleJobRecovery,
    fail_for_good_fields,
    reaper_outcome,
    retry_fields,
)
from queues.engine.recurring import RecurringRuns
from queues.engine.runs import Runs
from queues.engine.schedule_sync import ScheduleSync
from queues.enums import FAILURE_STATUSES, AttemptEnd, JobStatus
from queues.exceptions import InvalidJobTransition, JobNotFound
from queues.groups import BatchResult
from queues.models import Batch, FailedAttempt, Job, QueuePause
from queues.options import DequeueOptions
from queues.schedules import Schedule, declared
from queues.store import ClaimParams, Match, Store, sql_store
from queues.store.base import age_key, claim_key
from queues.tags import check_tag
from queues.text import storable_label, storable_or_none
from queues.validation import check_retry_time, parse_job_id, validate_queue_name

REAPER_BATCH = 500
#: How many claims whose call raised a queue remembers (by run token): each may have been
#: committed before its reply was lost, and a retry with its token then looks for its jobs.
UNSURE_CLAIMS = 64


class JobQueue(Enqueues, Runs, Limits, RecurringRuns):
    def __init__(self, using: str = "default", clock=None, rng: random.Random | None = None):
        self.using = using
        self._setup(clock or SYSTEM_CLOCK, rng, store=None)
        self._limit_cache = limits.shared_cache(using)

    def _setup(self, clock, rng: random.Random | None, store: Store | None) -> None:
        self.clock = clock
        self.rng = rng or random.Random()
        self._store = store
        self._unsure: OrderedDict[UUID, None] = OrderedDict()
        self._unsure_lock = threading.Lock()
        self._limit_cache = limits.LimitCache()
        self._stopped_at: dict[str, int] = {}
        self._rate_until: dict[str, object] = {}

    def __repr__(self) -> str:
        return f"JobQueue(using={self.using!r})"

    @property
    def store(self) -> Store:
        if self._store is None:  # found on first use: the connection's vendor picks it
            self._store = sql_store(self.using)
        return self._store

    def now(self) -> datetime:
        return self.clock.now()

    def _atomic(self, fn):
        return self.store.atomic(fn)

    # Claim ------------------------------------------------------------------------------
    def dequeue(
        self,
        queue_name: str,
        options: DequeueOptions | None = None,
        *,
        run_token=None,
        claimed_by: UUID | None = None,
    ) -> list[Job]:
        """Claim up to `options.batch_size` jobs as one run, with `run_token` (default: a new
        one), stamped with `claimed_by` (a worker process's id). A caller whose claim raised
        (a dropped connection) retries with the same token: if that claim was committed after
        all, the retry returns its jobs still Running instead of claiming more."""
        options = options or DequeueOptions()
        validate_queue_name(queue_name)
        if options.batch_size == 0:
            return []
        try:
            # A first claim pays one dict lookup: only tokens whose claim raised are looked up.
            if run_token is not None and run_token in self._unsure:
                found = self._claimed_before(queue_name, run_token)
                if found:
                    return found
            return self._claim(queue_name, options, run_token, claimed_by)
        except Exception:
            if run_token is not None:
                self._remember_unsure(run_token)
            raise

    def _claimed_before(self, queue_name: str, token: UUID) -> list[Job]:
        """The jobs of the claim `token` still Running, in claim order (none if it was not
        committed); the token is forgotten once asked."""
        match = Match(queue_name=queue_name, status=JobStatus.RUNNING, run_token=token)
        found = sorted(self.store.find_jobs(match), key=claim_key)
        with self._unsure_lock:
            self._unsure.pop(token, None)
        return found

    def _remember_unsure(self, token: UUID) -> None:
        with self._unsure_lock:
            self._unsure[token] = None
            self._unsure.move_to_end(token)
            while len(self._unsure) > UNSURE_CLAIMS:
                self._unsure.popitem(last=False)

    def _claim(
        self, queue_name: str, options: DequeueOptions, run_token, claimed_by: UUID | None
    ) -> list[Job]:
        now = self.now()
        weights = options.priority_weights
        store = self.store
        params = ClaimParams(
            queue=queue_name,
            limit=options.batch_size,
            now=now,
            lease_expires_at=now + options.lease_duration,
            token=run_token or uuid.uuid4(),
            claimed_by=claimed_by,
        )

        strict = weights is None or weights.strict_priority

        def weighted(wanted: int, at: datetime = now) -> list[Job]:
            levels = store.claimable_levels(queue_name, at)
            claimed: list[Job] = []
            for level in weights.level_order(levels, self.rng):
                need = wanted - len(claimed)
                got = store.claim(at_time(at, limit=need, priority=level))
                claimed.extend(sorted(got, key=age_key))
                if len(claimed) >= wanted:
                    break
            return claimed

        def at_time(at: datetime, **changes) -> ClaimParams:
            # A limited claim's time is read under its lock (queues.engine.limits).
            lease = at + options.lease_duration
            return replace(params, now=at, lease_expires_at=lease, **changes)

        def up_to(wanted: int, at: datetime) -> list[Job]:
            if strict:
                return sorted(store.claim(at_time(at, limit=wanted)), key=claim_key)
            return weighted(wanted, at)

        if self._is_limited(queue_name):
            wanted = options.batch_size
            claimed = self._atomic(lambda: self._claim_within_limit(queue_name, wanted, up_to))
        elif strict:
            one = store.claim_is_one_statement
            claimed = store.atomic(lambda: store.claim(params), single_statement=one)
            claimed = sorted(claimed, key=claim_key)
        else:
            claimed = self._atomic(lambda: weighted(options.batch_size))
        # Committed (or at the commit of the caller's transaction).
        signals.started(store, type(self), claimed, claimed_by)
        return claimed

    def next_due(self, queue_name: str) -> datetime | None:
        """When `queue_name` next has a claimable job by time alone: the earliest
        `scheduled_at` of its Pending jobs without unfinished dependencies (in the past if
        one is claimable now); None if it has none or is paused. An idle worker sleeps until
        then (or its poll interval). Reads only, one index probe per priority level."""
        validate_queue_name(queue_name)
        return self.store.next_due(queue_name)

    def data_version(self) -> int | None:
        """A number that changes when another connection commits to the database (SQLite's
        `PRAGMA data_version`, read on this thread's connection); None where the database
        has no such cheap counter."""
        return self.store.data_version()

    def dequeue_one(self, queue_name: str, options: DequeueOptions | None = None) -> Job | None:
        options = (options or DequeueOptions()).with_batch_size(1)
        jobs = self.dequeue(queue_name, options)
        return jobs[0] if jobs else None

    # Reaper -----------------------------------------------------------------------------
    def requeue_stale_jobs(
        self, queue_name: str | None = None, ran_by: str = ""
    ) -> StaleJobRecovery:
        """Take back Running jobs whose lease expired: Pending again, or Dead when their
        attempts are used up. Records a `ReaperRun`."""
        if queue_name is not None:
            validate_queue_name(queue_name)
        recovery = StaleJobRecovery()
        now = self.now()

        def one_pass() -> int:
            attempts: list[FailedAttempt] = []
            expired = self.store.lock_expired_leases(now, queue_name, REAPER_BATCH)
            found = self.store.find_jobs(Match(ids=[job_id for job_id, _ in expired]))
            jobs = {job.id: job for job in found}
            # Equal lease expiries (a batch claim) are taken in id order on every vendor, so
            # which of them a fail-fast failure reaches first does not depend on the database.
            expired.sort(key=lambda pair: (_lease_of(jobs, pair[0]), str(pair[0])))
            for job_id, token in expired:
                job = jobs.get(job_id)
                if job is None or job.run_token != token:
                    continue
                recorded = self._record(job, reaper_outcome(job, now), now, attempts)
                if recorded is not None:
                    recovery.note(job_id, recorded)
            self._insert_attempts(attempts)
            return len(expired)

        while self._atomic(one_pass) == REAPER_BATCH:
            pass
        self.store.insert_reaper_run(recovery.row(now, ran_by, queue_name))
        return recovery

    # Pause ------------------------------------------------------------------------------
    def pause_queue(self, queue_name: str, paused_by: str | None = None, reason: str | None = None):
        validate_queue_name(queue_name)
        pause = QueuePause(
            queue_name=queue_name,
            paused_at=self.now(),
            paused_by=storable_label(paused_by),
            reason=storable_or_none(reason),
        )
        self.store.pause(pause)

    def resume_queue(self, queue_name: str, resumed_by: str | None = None) -> None:
        validate_queue_name(queue_name)
        self.store.resume(queue_name)

    def is_queue_paused(self, queue_name: str) -> bool:
        validate_queue_name(queue_name)
        return self.store.is_paused(queue_name)

    # Operators --------------------------------------------------------------------------
    def get_job(self, job_id: UUID | str) -> Job | None:
        jobs = self.store.find_jobs(Match(ids=[parse_job_id(job_id)]), limit=1)
        return jobs[0] if jobs else None

    def _locked(self, job_id) -> Job:
        jobs = self.store.lock_jobs(Match(ids=[parse_job_id(job_id)]))
        if not jobs:
            raise JobNotFound(f"no job {job_id}")
        return jobs[0]

    def _update(self, job: Job, fields: dict) -> None:
        self.store.update_jobs(Match(ids=[job.id]), fields)

    def enable_recurring_job(self, job_id: UUID | str) -> None:
        self._set_recurring(job_id, True)

    def disable_recurring_job(self, job_id: UUID | str) -> None:
        self._set_recurring(job_id, False)

    def _set_recurring(self, job_id, enabled: bool) -> None:
        def work():
            job = self._locked(job_id)
            transitions.check(transitions.RECURRING, job)
            self._update(job, {"recurring": enabled})

        self._atomic(work)

    def retry_job(self, job_id: UUID | str, at: datetime | None = None) -> None:
        """Back to Pending, scheduled at `at` (default now). A terminal job gets its attempts
        back; a Running job's current run is fenced out."""
        check_retry_time(at)
        now = self.now()
        try:
            self._atomic(lambda: self._retry_one(job_id, at or now, now))
        except IntegrityError as exc:  # an enqueue took the key it was taking back
            raise InvalidJobTransition(f"another job took the unique key of job {job_id}") from exc

    def retry_jobs(
        self,
        job_ids: Iterable[UUID | str],
        at: datetime | None = None,
        where: Callable[[Job], bool] | None = None,
    ) -> JobsActed:
        """`retry_job` on those of `job_ids` it applies to and, if given, `where` holds for
        once locked, in one transaction and a few statements for them all
        (`queues.engine.operator_batches`)."""
        check_retry_time(at)
        now = self.now()
        return operator_batches.retry(self, job_ids, at or now, now, where)

    def _retry_one(self, job_id, at: datetime, now: datetime) -> None:
        job = self._locked(job_id)
        blocked = lambda: bool(self.store.blocked([job.id]))  # noqa: E731
        fields = retry_fields(job, at, blocked)
        self._update(job, {**fields, **unique.retake(self.store, job, now)})
        self._note_ended_run(job, AttemptEnd.RETRIED, JobStatus.PENDING, RETRIED_RUNNING, now)
        change = (job.batch_id, job.workflow_id, job.status, JobStatus.PENDING)
        effects.apply_tallies(self.store, [change], now)
        self._announce_operator(job, fields, JobStatus.PENDING, now)

    def cancel_job(self, job_id: UUID | str, reason: str = "Cancelled by an operator") -> None:
        """Fail a Pending or Running job for good (a running handler's outcome is then
        discarded); its dependents, workflow and fail-fast batch react as to any failure."""
        self._fail_for_good(job_id, JobStatus.FAILED, reason)

    def cancel_jobs(
        self,
        job_ids: Iterable[UUID | str],
        reason: str = "Cancelled by an operator",
        where: Callable[[Job], bool] | None = None,
    ) -> JobsActed:
        """`cancel_job` on those of `job_ids` it applies to and `where` holds for, in one
        transaction (`queues.engine.operator_batches`)."""
        return operator_batches.fail_for_good(self, job_ids, JobStatus.FAILED, reason, where)

    def mark_job_dead(self, job_id: UUID | str, reason: str = "Marked dead by an operator") -> None:
        self._fail_for_good(job_id, JobStatus.DEAD, reason)

    def mark_jobs_dead(
        self,
        job_ids: Iterable[UUID | str],
        reason: str = "Marked dead by an operator",
        where: Callable[[Job], bool] | None = None,
    ) -> JobsActed:
        """`mark_job_dead` on many jobs, as `cancel_jobs`."""
        return operator_batches.fail_for_good(self, job_ids, JobStatus.DEAD, reason, where)

    def _fail_for_good(self, job_id, status: JobStatus, reason: str) -> None:
        now = self.now()
        self._atomic(lambda: self._fail_one(job_id, status, reason, now))

    def _fail_one(self, job_id, status: JobStatus, reason: str, now: datetime) -> None:
        end = AttemptEnd.CANCELLED if status == JobStatus.FAILED else AttemptEnd.MARKED_DEAD
        job = self._locked(job_id)
        old = job.status
        fields = fail_for_good_fields(job, status, reason, now)
        self._update(job, fields)
        self._note_ended_run(job, end, status, fields["error_message"], now)
        job.status = status
        _, more = effects.after_terminal_failure(self.store, job, now)
        changes = [(job.batch_id, job.workflow_id, old, status), *more]
        effects.apply_tallies(self.store, changes, now)
        self._announce_operator(job, fields, status, now)

    def _announce_operator(self, job: Job, fields: dict, status: str, now) -> None:
        """The signal of an operator's action on `job` (sent once it commits)."""
        attempt, started_at = job.attempts, job.started_at
        for name, value in fields.items():
            setattr(job, name, value)
        signals.operator_acted(self.store, type(self), job, status, attempt, started_at, now)

    def _note_ended_run(self, job: Job, end: str, status: str, reason, now) -> None:
        """An operator's action ended the run of `job` (if it was Running): its history
        row, on which its worker notes later how the handler ended."""
        row = history.operator_row(job, end, status, reason, now)
        if row is not None:
            self.store.insert_attempts([row])

    def delete_job(self, job_id: UUID | str) -> None:
        """Delete a job that is not Running (and its dependency edges)."""

        def work():
            job = self._locked(job_id)
            transitions.check(transitions.DELETE, job)
            self._delete_locked([job], self.now())

        self._atomic(work)

    def delete_jobs(
        self, job_ids: Iterable[UUID | str], where: Callable[[Job], bool] | None = None
    ) -> JobDeletion:
        """Delete, in one transaction, those of `job_ids` that `delete_job` would delete
        (not Running) and, if given, `where` holds for once locked (the condition of a
        selection, asked again: a job retried meanwhile is kept). For a batch of ids at a
        time: `manage.py jobs delete` and `purge` call it 1,000 ids at a time."""
        ids = sorted({parse_job_id(job_id) for job_id in job_ids}, key=str)
        now = self.now()

        def work() -> JobDeletion:
            locked = self.store.lock_jobs(Match(ids=ids)) if ids else []
            result = JobDeletion(missing=len(ids) - len(locked))
            doomed = []
            for job in sorted(locked, key=lambda job: str(job.id)):
                if transitions.refusal(transitions.DELETE, job) is not None:
                    result.refused.append(job.id)
                elif where is not None and not where(job):
                    result.kept.append(job.id)
                else:
                    doomed.append(job)
            if doomed:
                self._delete_locked(doomed, now)
            result.deleted = [job.id for job in doomed]
            return result

        return self._atomic(work)

    def _delete_locked(self, jobs: list[Job], now: datetime) -> None:
        """Delete `jobs` (locked, each deletable) with their edges and history; release the
        dependents that waited only for them and take them off their groups' tallies."""
        ids = [job.id for job in jobs]
        orphans = self.store.dependents(ids) - set(ids)
        self.store.delete_jobs(Match(ids=ids))
        # Dependents that waited only for these jobs can run now.
        effects.release_waiting(self.store, orphans)
        changes = [(job.batch_id, job.workflow_id, job.status, None) for job in jobs]
        effects.apply_tallies(self.store, changes, now)

    # Declared schedules -----------------------------------------------------------------
    def sync_schedules(self, schedules: Iterable[Schedule] | None = None) -> ScheduleSync:
        """Bring the rows of declared schedules in line with `schedules` (default: those of
        `HAMMERWEB["SCHEDULES"]`): created, updated in place, the removed ones disabled."""
        found = declared() if schedules is None else list(schedules)
        return schedule_sync.sync(self, found)

    # Reads ------------------------------------------------------------------------------
    def get_job_attempts(self, job_id: UUID | str) -> list[FailedAttempt]:
        """The job's error history: a row per failed attempt, oldest first."""
        return self.store.find_attempts(parse_job_id(job_id))

    def get_job_counts_by_status(self, queue_name: str) -> dict[str, int]:
        validate_queue_name(queue_name)
        return self.store.count_jobs(queue_name)

    def get_tagged_jobs(
        self, tag: str, queue_name: str | None = None, limit: int | None = 1000
    ) -> list[Job]:
        """The jobs that have `tag` (of `queue_name`, if given), in claim order: the first
        `limit` (None: all)."""
        check_tag(tag)
        if queue_name is not None:
            validate_queue_name(queue_name)
        return self.store.find_jobs(Match(tag=tag, queue_name=queue_name), limit=limit)

    def get_batch_jobs(self, batch_id: UUID | str) -> list[Job]:
        jobs = self.store.find_jobs(Match(batch_id=parse_job_id(batch_id)))
        # Sorted here, not in SQL: MariaDB orders its native UUIDs by their last group first,
        # and every queue must list a batch in the same order.
        return sorted(jobs, key=lambda job: (job.created_at, str(job.id)))

    def get_batch_status(self, batch_id: UUID | str) -> BatchResult:
        batch = self.store.get_group(Batch, parse_job_id(batch_id))
        if batch is None:
            raise JobNotFound(f"no batch {batch_id}")
        errors = {}
        if batch.failed_jobs:
            failed = Match(batch_id=batch.id, status=FAILURE_STATUSES)
            errors = {job.id: job.error_message for job in self.store.find_jobs(failed, limit=1000)}
        return BatchResult.of(batch, errors)


def _lease_of(jobs, job_id):
    job = jobs.get(job_id)
    return (
        job.lease_expires_at if job and job.lease_expires_at else datetime.max.replace(tzinfo=UTC)
    )
