"""The memory store: the `Store` protocol in plain dicts (jobs, dependency edges, batches,
workflows, pauses, queue configurations, reaper runs, the error history), under `TestQueue`.

It behaves as the database does: every operation holds the store's lock, so each is atomic;
`atomic` holds it for a whole transaction and undoes the transaction's writes if it raises;
a taken id raises `IntegrityError`; JSON columns are stored through a JSON round trip and
times in UTC. It holds its own copies: what goes in is copied, and what comes out is copied
again, so a caller never shares an object with it.
"""

from __future__ import annotations

import copy
import functools
import json
import threading
import warnings
from collections.abc import Callable
from datetime import UTC, datetime
from itertools import repeat
from uuid import UUID

from django.db import IntegrityError
from django.utils import timezone

from queues.enums import (
    FAILURE_STATUSES,
    BatchStatus,
    DependencyStatus,
    JobStatus,
    PartialFailureMode,
)
from queues.models import Batch, FailedAttempt, Job, QueueConfig, QueuePause, ReaperRun, Workflow
from queues.store.base import ClaimParams, Match, claim_key

#: The JSON columns: stored as the database would store them (a JSON round trip).
_JSON_FIELDS = ("payload", "result", "retry_strategy", "depends_on", "unique_scope", "tags", "meta")
_COLUMNS = [field.attname for field in Job._meta.concrete_fields]
_ATTEMPT_COLUMNS = [field.attname for field in FailedAttempt._meta.concrete_fields]
_CLAIMABLE_DEPENDENCY = (DependencyStatus.NONE, DependencyStatus.SATISFIED)
_MISSING = object()
#: The columns of a run, cleared when it is handed back.
_UNRUN = dict.fromkeys(("started_at", "last_heartbeat_at", "lease_expires_at", "run_token"))


def copied(obj):
    """A copy that shares nothing with `obj` (a model instance or a list of them). Its mutable
    values (the JSON columns) are copied deeply and the rest (times, ids, strings) shared:
    10 us a job instead of `copy.deepcopy`'s 32 us (measured), which walks the model's state."""
    if isinstance(obj, list):
        return [copied(item) for item in obj]
    clone = object.__new__(type(obj))
    clone.__dict__.update(
        {k: copy.deepcopy(v) if isinstance(v, dict | list) else v for k, v in vars(obj).items()}
    )
    clone._state = copy.copy(obj._state)
    return clone


def _stored(value, name: str):
    """A column value as the database would store it: JSON through a JSON round trip, times
    in UTC."""
    if name in _JSON_FIELDS and value is not None:
        return json.loads(json.dumps(value))
    if isinstance(value, datetime):
        if timezone.is_naive(value):  # as Django's DateTimeField takes it
            warnings.warn(
                f"DateTimeField Job.{name} received a naive datetime ({value}) while time "
                "zone support is active.",
                RuntimeWarning,
                stacklevel=4,
            )
            value = timezone.make_aware(value)
        return value.astimezone(UTC)
    return value


def _holding_lock(fn):
    @functools.wraps(fn)
    def locked(self, *args, **kwargs):
        with self._lock:
            return fn(self, *args, **kwargs)

    return locked


def _own_lock(fn):
    """A method that takes the store's lock itself (to call something after releasing it)."""
    fn.own_lock = True
    return fn


def _serialised(cls):
    """Every public method holds the store's (re-entrant) lock: each operation is atomic."""
    for name, fn in list(vars(cls).items()):
        if callable(fn) and not name.startswith("_") and not getattr(fn, "own_lock", False):
            setattr(cls, name, _holding_lock(fn))
    return cls


@_serialised
class MemoryStore:
    claim_is_one_statement = True  # every transaction is a lock held: no round trips to save

    def __init__(self) -> None:
        self.jobs: dict[UUID, Job] = {}
        self.parents: dict[UUID, list[UUID]] = {}  # a job -> the jobs it waits for
        self.children: dict[UUID, list[UUID]] = {}  # and back
        self.batches: dict[UUID, Batch] = {}
        self.workflows: dict[UUID, Workflow] = {}
        self.pauses: dict[str, QueuePause] = {}
        self.configs: dict[str, QueueConfig] = {}
        self.reaper_rows: dict[int, ReaperRun] = {}
        self.attempts: dict[UUID, list[FailedAttempt]] = {}  # a job -> its history rows
        self._attempt_ids = 0
        self._lock = threading.RLock()
        self._undo: list[Callable[[], None]] | None = None  # the open transaction's
        self._after: list[Callable[[], None]] = []  # and what runs once it committed

    # Transactions -----------------------------------------------------------------------
    @_own_lock
    def atomic(self, fn, *, single_statement: bool = False):
        with self._lock:
            if self._undo is not None:
                return fn()  # part of the caller's transaction
            self._undo, self._after = [], []
            try:
                result = fn()
            except BaseException:
                for undo in reversed(self._undo):
                    undo()
                raise
            finally:
                self._undo, after, self._after = None, self._after, []
        # After the commit, the lock released: a receiver called here may wait for another
        # thread that uses the store.
        for callback in after:
            callback()
        return result

    @_own_lock
    def on_commit(self, fn) -> None:
        with self._lock:
            if self._undo is not None:  # this thread's transaction: the lock is held
                self._after.append(fn)
                return
        fn()

    def _set(self, row, fields) -> None:
        """Write columns of a stored row (undone with its transaction)."""
        if self._undo is not None:
            before = dict(row.__dict__)
            self._undo.append(lambda: row.__dict__.update(before))
        for name, value in fields.items():
            setattr(row, name, _stored(value, name))

    def _put(self, table: dict, key, value) -> None:
        """Set (or, with _MISSING, delete) an entry of a table (undone with its transaction)."""
        old = table.get(key, _MISSING)
        if self._undo is not None:
            self._undo.append(lambda: self._restore(table, key, old))
        self._restore(table, key, value)

    @staticmethod
    def _restore(table: dict, key, value) -> None:
        if value is _MISSING:
            table.pop(key, None)
        else:
            table[key] = value

    # Claims -----------------------------------------------------------------------------
    def _claimable(self, queue: str, now: datetime) -> list[Job]:
        return [
            job
            for job in self.jobs.values()
            if job.queue_name == queue
            and job.status == JobStatus.PENDING
            and job.scheduled_at <= now
            and job.dependency_status in _CLAIMABLE_DEPENDENCY
            and (job.cron_schedule is None or job.recurring)
        ]

    def claimable_levels(self, queue: str, now: datetime) -> list[int]:
        return sorted({int(job.priority) for job in self._claimable(queue, now)})

    def next_due(self, queue: str) -> datetime | None:
        if queue in self.pauses:
            return None
        future = datetime.max.replace(tzinfo=UTC)
        due = min((job.scheduled_at for job in self._claimable(queue, future)), default=None)
        return due

    def data_version(self) -> int | None:
        return None  # one process: nothing commits behind the worker's back

    def claim(self, params: ClaimParams) -> list[Job]:
        if params.queue in self.pauses:
            return []
        ready = [
            job
            for job in self._claimable(params.queue, params.now)
            if params.priority is None or job.priority == params.priority
        ]
        picked = sorted(ready, key=claim_key)[: params.limit]
        for job in picked:
            self._set(
                job,
                {
                    "status": JobStatus.RUNNING,
                    "attempts": job.attempts + 1,
                    "started_at": params.now,
                    "last_heartbeat_at": params.now,
                    "lease_expires_at": params.lease_expires_at,
                    "run_token": params.token,
                    "claimed_by": params.claimed_by,
                },
            )
        return copied(picked)

    def lock_queue_limit(self, queue: str) -> QueueConfig | None:
        # The store's lock, held by `atomic` for the whole claim, is the row's lock.
        row = self.configs.get(queue)
        return None if row is None else copied(row)

    def spend_rate_tokens(self, queue: str, tokens: int, refilled_at) -> None:
        row = copied(self.configs[queue])
        row.rate_tokens, row.rate_refilled_at = tokens, refilled_at
        self._put(self.configs, queue, row)

    def count_running(self, queue: str) -> int:
        jobs = self.jobs.values()
        return sum(1 for job in jobs if job.queue_name == queue and job.status == JobStatus.RUNNING)

    # Runs (fenced) ----------------------------------------------------------------------
    def _runs(self, ids, token) -> list[Job]:
        """The stored jobs of `ids` still Running with `token` (each once)."""
        rows = (self.jobs.get(job_id) for job_id in dict.fromkeys(ids))
        return [
            job
            for job in rows
            if job is not None and job.status == JobStatus.RUNNING and job.run_token == token
        ]

    def startable_runs(self, ids) -> dict[UUID, UUID]:
        return {
            job_id: token
            for job_id, token in self.running_tokens(ids).items()
            if self.jobs[job_id].queue_name not in self.pauses
            and not self._fail_fast_failed(self.jobs[job_id])
        }

    def _fail_fast_failed(self, job: Job) -> bool:
        """Whether the job's batch fails fast and has failed (then it must not start)."""
        batch = self.batches.get(job.batch_id) if job.batch_id else None
        return (
            batch is not None
            and batch.failure_mode == PartialFailureMode.FAIL_FAST
            and batch.status == BatchStatus.FAILED
        )

    def start_runs(self, ids, token, now) -> dict[UUID, tuple[bool, bool]]:
        started = {}
        for job in self._runs(ids, token):
            self._set(job, {"started_at": now, "last_heartbeat_at": now})
            started[job.id] = (job.queue_name in self.pauses, self._fail_fast_failed(job))
        return started

    def complete_runs(self, ids, token, now, results=None) -> dict[UUID, bool]:
        fields = {
            "status": JobStatus.COMPLETED,
            "completed_at": now,
            "run_token": None,
            "lease_expires_at": None,
        }
        by_id = dict(zip(ids, results if results is not None else repeat(None)))
        completed = {}
        for job in self._runs(list(by_id), token):
            self._set(job, {**fields, "result": by_id[job.id]})
            completed[job.id] = bool(self.children.get(job.id))
        return completed

    def lock_runs(self, ids, token) -> dict[UUID, bool]:
        return {job.id: bool(self.children.get(job.id)) for job in self._runs(ids, token)}

    def update_each(self, rows) -> None:
        for job_id, fields in rows.items():
            if job_id in self.jobs:
                self._set(self.jobs[job_id], fields)

    def update_runs(self, ids, token, fields) -> int:
        runs = self._runs(ids, token)
        for job in runs:
            self._set(job, fields)
        return len(runs)

    def release_runs(self, ids, token) -> int:
        runs = self._runs(ids, token)
        for job in runs:
            self._set(job, {"status": JobStatus.PENDING, "attempts": job.attempts - 1, **_UNRUN})
        return len(runs)

    def running_tokens(self, ids) -> dict[UUID, UUID]:
        rows = (self.jobs.get(job_id) for job_id in ids)
        return {job.id: job.run_token for job in rows if job and job.status == JobStatus.RUNNING}

    def lock_expired_leases(self, now, queue, limit) -> list[tuple[UUID, UUID]]:
        expired = [
            job
            for job in self.jobs.values()
            if job.status == JobStatus.RUNNING
            and job.lease_expires_at < now
            and (queue is None or job.queue_name == queue)
        ]
        expired.sort(key=lambda job: (job.lease_expires_at, str(job.id)))
        return [(job.id, job.run_token) for job in expired[:limit]]

    # Jobs -------------------------------------------------------------------------------
    def insert_jobs(self, jobs) -> None:
        taken = [job.id for job in jobs if job.id in self.jobs]
        if taken:
            raise IntegrityError(f"job {taken[0]} already exists")
        slots = [job.unique_slot for job in jobs if job.unique_slot is not None]
        if slots:
            held = {job.unique_slot for job in self.jobs.values()}
            if len(set(slots)) != len(slots) or held.intersection(slots):
                raise IntegrityError("a unique slot is taken")
        for job in jobs:
            stored = copied(job)
            self._set(stored, {name: getattr(job, name) for name in _COLUMNS})
            self._put(self.jobs, job.id, stored)
            parents = [UUID(p) for p in job.depends_on]
            self._put(self.parents, job.id, parents)
            for parent in parents:
                self._put(self.children, parent, [*self.children.get(parent, []), job.id])

    def _matching(self, match: Match) -> list[Job]:
        if match.ids is not None:
            rows = (self.jobs.get(job_id) for job_id in match.ids)
            return [job for job in rows if job is not None and match.matches(job)]
        return [job for job in self.jobs.values() if match.matches(job)]

    def find_jobs(self, match: Match, limit: int | None = None) -> list[Job]:
        return copied(sorted(self._matching(match), key=claim_key)[:limit])

    def lock_jobs(self, match: Match) -> list[Job]:
        return copied(sorted(self._matching(match), key=lambda job: job.id))

    def update_jobs(self, match: Match, fields) -> int:
        rows = self._matching(match)
        slot = fields.get("unique_slot")
        if slot is not None:  # the unique index
            mine = {job.id for job in rows}
            others = (job for job in self.jobs.values() if job.id not in mine)
            if len(rows) > 1 or any(job.unique_slot == slot for job in others):
                raise IntegrityError("a unique slot is taken")
        for job in rows:
            self._set(job, fields)
        return len(rows)

    def delete_jobs(self, match: Match) -> int:
        rows = self._matching(match)
        for job in rows:
            self._put(self.jobs, job.id, _MISSING)
            # The edges both ways, as the database's cascade deletes them.
            for parent in self.parents.get(job.id, []):
                rest = [c for c in self.children.get(parent, []) if c != job.id]
                self._put(self.children, parent, rest)
            for child in self.children.get(job.id, []):
                self._put(self.parents, child, [p for p in self.parents[child] if p != job.id])
            self._put(self.parents, job.id, _MISSING)
            self._put(self.children, job.id, _MISSING)
            self._put(self.attempts, job.id, _MISSING)
        return len(rows)

    def count_jobs(self, queue: str) -> dict[str, int]:
        counts = dict.fromkeys(JobStatus.values, 0)
        for job in self.jobs.values():
            if job.queue_name == queue:
                counts[job.status] += 1
        return counts

    def declared_jobs(self) -> list[Job]:
        return copied([job for job in self.jobs.values() if job.schedule_name is not None])

    # The error history ------------------------------------------------------------------
    def insert_attempts(self, rows) -> None:
        missing = [row.job_id for row in rows if row.job_id not in self.jobs]
        if missing:  # as the database's foreign key refuses it
            raise IntegrityError(f"no job {missing[0]}")
        for row in rows:
            self._attempt_ids += 1  # ids are not reused, even if the transaction is undone
            stored = copied(row)
            self._set(stored, {name: getattr(row, name) for name in _ATTEMPT_COLUMNS})
            stored.id = self._attempt_ids
            self._put(self.attempts, row.job_id, [*self.attempts.get(row.job_id, []), stored])

    def find_attempts(self, job_id) -> list[FailedAttempt]:
        return copied(list(self.attempts.get(job_id, [])))

    def update_attempt(self, job_id, token, fields) -> int:
        rows = [row for row in self.attempts.get(job_id, []) if row.run_token == token]
        for row in rows:
            self._set(row, fields)
        return len(rows)

    # Dependencies -----------------------------------------------------------------------
    def dependents(self, ids) -> set[UUID]:
        return {child for parent in ids for child in self.children.get(parent, [])}

    def dependents_of(self, ids) -> dict[UUID, set[UUID]]:
        return {parent: set(self.children[parent]) for parent in ids if self.children.get(parent)}

    def blocked(self, ids) -> set[UUID]:
        def waits(job_id) -> bool:
            parents = self.parents.get(job_id, [])
            return any(self.jobs[p].status != JobStatus.COMPLETED for p in parents)

        return {job_id for job_id in ids if waits(job_id)}

    # Batches and workflows --------------------------------------------------------------
    def _groups(self, model) -> dict:
        return self.batches if model is Batch else self.workflows

    def insert_group(self, row) -> None:
        table = self._groups(type(row))
        if row.id in table:
            raise IntegrityError(f"{type(row).__name__} {row.id} already exists")
        self._put(table, row.id, copied(row))

    def get_group(self, model, group_id):
        row = self._groups(model).get(group_id)
        return None if row is None else copied(row)

    def lock_group(self, model, group_id):
        return self.get_group(model, group_id)

    def update_group(self, model, group_id, fields) -> None:
        row = self._groups(model).get(group_id)
        if row is not None:
            self._set(row, fields)

    def first_failure(self, batch_id, excluding: str) -> UUID | None:
        failures = self._matching(Match(batch_id=batch_id, status=FAILURE_STATUSES))
        for job in sorted(failures, key=claim_key):
            if not (job.error_message or "").startswith(excluding):
                return job.id
        return None

    # Pauses, queue configurations and reaper runs ---------------------------------------
    def pause(self, row: QueuePause) -> None:
        self._put(self.pauses, row.queue_name, copied(row))

    def resume(self, queue: str) -> None:
        self._put(self.pauses, queue, _MISSING)

    def is_paused(self, queue: str) -> bool:
        return queue in self.pauses

    def replace_tags(self, job: Job) -> None:
        pass  # the tag filters read the stored job's own tags

    def get_queue_config(self, queue: str) -> QueueConfig | None:
        row = self.configs.get(queue)
        return None if row is None else copied(row)

    def set_queue_config(self, queue: str, fields) -> QueueConfig:
        found = self.configs.get(queue)
        row = copied(found) if found is not None else QueueConfig(queue_name=queue)
        for name, value in fields.items():
            setattr(row, name, value)
        self._put(self.configs, queue, copied(row))
        return row

    def insert_reaper_run(self, row: ReaperRun) -> None:
        row.id = len(self.reaper_rows) + 1
        self._put(self.reaper_rows, row.id, copied(row))

    def reaper_runs(self) -> list[ReaperRun]:
        """What the reaper recorded, oldest first (TestQueue's `reaper_runs`)."""
        return copied(list(self.reaper_rows.values()))
