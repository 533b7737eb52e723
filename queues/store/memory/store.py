"""The memory store: `MemoryStore`, the `Store` protocol in plain dicts, under `TestQueue`. It
behaves as the database does (each operation atomic, a transaction undone if it raises, a
taken id an `IntegrityError`). Its tables and transactions are in `tables`, its parts in
`rows` and `upkeep`; the claims and runs are here. See docs/design/store.md."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import UUID

from queues.enums import BatchStatus, DependencyStatus, JobStatus, PartialFailureMode
from queues.models import Job, QueueConfig
from queues.store.match import ClaimParams, claim_key
from queues.store.memory.archive import MemoryArchive
from queues.store.memory.rows import MemoryRows
from queues.store.memory.tables import MemoryTables, copied, serialised
from queues.store.memory.upkeep import MemoryUpkeep

_CLAIMABLE_DEPENDENCY = (DependencyStatus.NONE, DependencyStatus.SATISFIED)
#: The columns of a run, cleared when it is handed back.
_UNRUN = dict.fromkeys(("started_at", "last_heartbeat_at", "lease_expires_at", "run_token"))


@serialised
class MemoryStore(MemoryRows, MemoryUpkeep, MemoryArchive, MemoryTables):
    claim_is_one_statement = True  # every transaction is a lock held: no round trips to save

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

    def next_due_many(self, queues) -> dict[str, datetime | None]:
        return {queue: self.next_due(queue) for queue in queues}

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

    def complete_runs(self, runs, now) -> dict[UUID, bool]:
        fields = {
            "status": JobStatus.COMPLETED,
            "completed_at": now,
            "run_token": None,
            "lease_expires_at": None,
        }
        completed = {}
        by_id = {job_id: (token, result) for job_id, token, result in runs}  # as SQL's join
        for job_id, (token, result) in by_id.items():
            for job in self._runs([job_id], token):
                self._set(job, {**fields, "result": result})
                completed[job.id] = bool(self.children.get(job.id))
        return completed

    def complete_free_runs(self, runs, now, check=()):
        free = [run for run in runs if not self.children.get(run[0])]
        return set(self.complete_runs(free, now)), self.startable_runs(check)

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
