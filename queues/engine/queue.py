"""`JobQueue`: the queue, composed of its parts over a store (one Django database through the
SQL store; memory under `TestQueue`). It holds the claim, pauses and reads; the writes are
its parts' (`Enqueues`, `Runs`, `Limits`, `Operators`, ...), each typed against `QueueCore`.
Every method is one transaction or one statement. See docs/design/engine.md.
"""

from __future__ import annotations

import random
import threading
import uuid
from collections import OrderedDict
from dataclasses import replace
from datetime import datetime
from uuid import UUID

from queues import signals
from queues.clock import SYSTEM_CLOCK
from queues.engine.archives import Archives
from queues.engine.deletes import Deletes
from queues.engine.enqueue import Enqueues
from queues.engine.explain import Explanation, explain
from queues.engine.limits import LimitCache, Limits, shared_cache
from queues.engine.operators import Operators
from queues.engine.recurring import RecurringRuns
from queues.engine.runs import Runs
from queues.engine.schedule_sync import DeclaredSchedules
from queues.enums import FAILURE_STATUSES, JobStatus
from queues.exceptions import JobNotFound
from queues.groups import BatchResult
from queues.models import Batch, FailedAttempt, Job, QueuePause
from queues.options import DequeueOptions
from queues.store import ClaimParams, Match, Store, sql_store
from queues.store.base import age_key, claim_key
from queues.tags import check_tag
from queues.text import storable_label, storable_or_none
from queues.validation import parse_job_id, validate_queue_name

#: How many claims whose call raised a queue remembers (by run token): each may have been
#: committed before its reply was lost, and a retry with its token then looks for its jobs.
UNSURE_CLAIMS = 64


class JobQueue(
    Enqueues, Runs, Limits, Operators, Deletes, RecurringRuns, DeclaredSchedules, Archives
):
    """The queue of one database alias: the claim, pauses and reads, and the parts it is
    composed of, to which it gives what `QueueCore` declares."""

    def __init__(self, using: str = "default", clock=None, rng: random.Random | None = None):
        self.using = using
        self._setup(clock or SYSTEM_CLOCK, rng, None, shared_cache(using))

    def _setup(
        self, clock, rng: random.Random | None, store: Store | None, limit_cache=None
    ) -> None:
        """The state of a new queue; `store` None: found on first use, `limit_cache` None:
        its own (a `TestQueue`'s)."""
        self.clock = clock
        self.rng = rng or random.Random()
        self._store = store
        self._unsure: OrderedDict[UUID, None] = OrderedDict()
        self._unsure_lock = threading.Lock()
        self._setup_limits(limit_cache or LimitCache())

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

    def next_due_many(self, queue_names) -> dict[str, datetime | None]:
        """`next_due` of each of `queue_names`, read in one statement: what one idle
        process asks for all its queues (workers/runtime/watch.py)."""
        names = list(queue_names)
        for name in names:
            validate_queue_name(name)
        return self.store.next_due_many(names)

    def data_version(self) -> int | None:
        """A number that changes when another connection commits to the database (SQLite's
        `PRAGMA data_version`, read on this thread's connection); None where the database
        has no such cheap counter."""
        return self.store.data_version()

    def dequeue_one(self, queue_name: str, options: DequeueOptions | None = None) -> Job | None:
        options = (options or DequeueOptions()).with_batch_size(1)
        jobs = self.dequeue(queue_name, options)
        return jobs[0] if jobs else None

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

    # Rows -------------------------------------------------------------------------------
    def get_job(self, job_id: UUID | str) -> Job | None:
        jobs = self.store.find_jobs(Match(ids=[parse_job_id(job_id)]), limit=1)
        return jobs[0] if jobs else None

    def _locked(self, job_id) -> Job:
        jobs = self.store.lock_jobs(Match(ids=[parse_job_id(job_id)]))
        if not jobs:
            raise JobNotFound(f"no job {job_id}")
        return jobs[0]

    # Reads ------------------------------------------------------------------------------
    def explain(self, job_id: UUID | str) -> Explanation:
        """Why the job is waiting, each reason with its evidence (`queues.engine.explain`);
        a job that could run now says so. A handful of indexed reads; writes nothing."""
        return explain(self, job_id)

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
