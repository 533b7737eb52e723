"""The memory store's rows: jobs by a `Match`, the error history, the dependency edges,
batches and workflows, pauses, queue configurations, reaper runs and worker processes, each
written through `MemoryTables` so that a transaction can undo it. A part of `MemoryStore`
(`queues.store.memory.store`). See docs/design/store.md."""

from __future__ import annotations

from uuid import UUID

from django.db import IntegrityError

from queues.enums import FAILURE_STATUSES, JobStatus, PartialFailureMode
from queues.models import (
    Batch,
    FailedAttempt,
    Job,
    QueueConfig,
    QueuePause,
    ReaperRun,
    WorkerProcess,
)
from queues.store.match import Match, claim_key
from queues.store.memory.tables import MISSING, copied

_COLUMNS = [field.attname for field in Job._meta.concrete_fields]
_ATTEMPT_COLUMNS = [field.attname for field in FailedAttempt._meta.concrete_fields]
_PROCESS_COLUMNS = [field.attname for field in WorkerProcess._meta.concrete_fields]


class MemoryRows:
    """The rows of `MemoryStore` (whose `MemoryTables` give the tables, `_set` and `_put`)."""

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
        self._delete_rows(rows)
        return len(rows)

    def _delete_rows(self, rows: list[Job]) -> None:
        """Delete stored jobs with their edges both ways and their history, as the
        database's cascade deletes them."""
        for job in rows:
            self._put(self.jobs, job.id, MISSING)
            for parent in self.parents.get(job.id, []):
                rest = [c for c in self.children.get(parent, []) if c != job.id]
                self._put(self.children, parent, rest)
            for child in self.children.get(job.id, []):
                self._put(self.parents, child, [p for p in self.parents[child] if p != job.id])
            self._put(self.parents, job.id, MISSING)
            self._put(self.children, job.id, MISSING)
            self._put(self.attempts, job.id, MISSING)

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

    def fail_fast_batches(self, ids):
        rows = (self.batches.get(batch_id) for batch_id in ids)
        return {
            row.id
            for row in rows
            if row is not None and row.failure_mode == PartialFailureMode.FAIL_FAST
        }

    def update_group(self, model, group_id, fields) -> None:
        row = self._groups(model).get(group_id)
        if row is not None:
            self._set(row, fields)

    def delete_group(self, model, group_id) -> None:
        column = "batch_id" if model is Batch else "workflow_id"
        self._delete_rows(self._matching(Match(**{column: group_id})))  # the cascade
        self._put(self._groups(model), group_id, MISSING)

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
        self._put(self.pauses, queue, MISSING)

    def is_paused(self, queue: str) -> bool:
        return queue in self.pauses

    def get_pause(self, queue: str) -> QueuePause | None:
        row = self.pauses.get(queue)
        return None if row is None else copied(row)

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
        self._reaper_ids += 1  # not the table's size: a pruned run leaves its id unused
        row.id = self._reaper_ids
        self._put(self.reaper_rows, row.id, copied(row))

    def reaper_runs(self) -> list[ReaperRun]:
        """What the reaper recorded, oldest first (TestQueue's `reaper_runs`)."""
        return copied(list(self.reaper_rows.values()))

    # Worker processes -------------------------------------------------------------------
    def register_process(self, row: WorkerProcess) -> None:
        if row.id in self.processes:
            raise IntegrityError(f"worker process {row.id} already exists")
        stored = copied(row)
        self._set(stored, {name: getattr(row, name) for name in _PROCESS_COLUMNS})
        self._put(self.processes, row.id, stored)

    def beat_process(self, process_id, held: int, running: int, processed: int, at) -> bool:
        row = self.processes.get(process_id)
        if row is None:
            return False
        self._set(row, {
            "jobs_held": held, "jobs_running": running, "jobs_processed": processed,
            "last_heartbeat_at": at,
        })  # fmt: skip
        return True

    def unregister_process(self, process_id) -> None:
        self._put(self.processes, process_id, MISSING)

    def get_process(self, process_id) -> WorkerProcess | None:
        row = self.processes.get(process_id)
        return None if row is None else copied(row)

    def live_processes(self, since, limit: int) -> list[WorkerProcess]:
        rows = [row for row in self.processes.values() if row.last_heartbeat_at >= since]
        rows.sort(key=lambda row: row.last_heartbeat_at, reverse=True)
        return copied(rows[:limit])
