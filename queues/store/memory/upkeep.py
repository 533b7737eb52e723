"""The memory store's upkeep: `Selection`s answered by their test of one row, the finished
groups by `queues.store.finished`'s, the pruner's deletes of the tables it has (no counters:
those are the SQL store's alone) and the rows of bulk operations. A part of `MemoryStore`
(`queues.store.memory.store`). See docs/design/maintenance.md."""

from __future__ import annotations

from uuid import UUID

from queues.enums import TERMINAL_STATUSES
from queues.models import BulkOperation, Job
from queues.store.base import PRUNED_TABLES
from queues.store.finished import group_finished_before
from queues.store.memory.tables import MISSING, copied

Status = BulkOperation.Status


class MemoryUpkeep:
    """The upkeep of `MemoryStore` (whose `MemoryTables` give the tables, `_set` and `_put`;
    `MemoryRows` gives `_delete_rows`)."""

    # Selections -------------------------------------------------------------------------
    def _selected(self, selection, rows=None) -> list[Job]:
        """The stored jobs (of `rows`, default all) that `selection` holds, in id order."""
        rows = self.jobs.values() if rows is None else rows
        return sorted((job for job in rows if selection.matches(job)), key=lambda job: job.id)

    def select_ids(self, selection, *, among=None, after=None, limit=None) -> list[UUID]:
        rows = None
        if among is not None:
            rows = [self.jobs[i] for i in dict.fromkeys(among) if i in self.jobs]
        ids = [job.id for job in self._selected(selection, rows)]
        if after:
            ids = [i for i in ids if i > UUID(str(after))]
        return ids[:limit]

    def count_selected(self, selection) -> int:
        return sum(1 for job in self.jobs.values() if selection.matches(job))

    def delete_selected(self, selection, limit: int) -> int:
        rows = self._selected(selection)[:limit]
        self._delete_rows(rows)
        return len(rows)

    def finished_groups(self, cutoff):
        busy = set()  # the groups with a job that has not finished
        for job in self.jobs.values():
            if job.status not in TERMINAL_STATUSES:
                busy.update((job.batch_id, job.workflow_id))
        groups = [*self.batches.values(), *self.workflows.values()]
        return copied([g for g in groups if g.id not in busy and group_finished_before(g, cutoff)])

    # The pruner -------------------------------------------------------------------------
    def prune_rows(self, table: str, before, limit: int) -> int:
        if table not in PRUNED_TABLES:
            raise KeyError(table)
        if table == "failed_attempts":
            rows = (row for job_rows in self.attempts.values() for row in job_rows)
            old = sorted(row.id for row in rows if row.failed_at < before)[:limit]
            doomed = set(old)
            for job_id, job_rows in list(self.attempts.items()):
                kept = [row for row in job_rows if row.id not in doomed]
                if len(kept) != len(job_rows):
                    self._put(self.attempts, job_id, kept)
            return len(old)
        # The tables keyed by their rows' ids, and the time column each is pruned by.
        keyed = {
            "reaper_runs": (self.reaper_rows, "ran_at"),
            "worker_processes": (self.processes, "last_heartbeat_at"),
        }
        if table not in keyed:
            return 0  # the counters, the SQL store's alone: none here
        rows, column = keyed[table]
        old = sorted(key for key, row in rows.items() if getattr(row, column) < before)[:limit]
        for key in old:
            self._put(rows, key, MISSING)
        return len(old)

    def roll_up_counts(self, now, kept) -> int:
        return 0  # no counters

    # Bulk operations --------------------------------------------------------------------
    def insert_bulk(self, row: BulkOperation) -> None:
        self._bulk_ids += 1  # ids are not reused, even if the transaction is undone
        row.id = self._bulk_ids
        self._put(self.bulk_ops, row.id, copied(row))

    def get_bulk(self, op_id: int) -> BulkOperation | None:
        row = self.bulk_ops.get(op_id)
        return None if row is None else copied(row)

    def lock_bulk(self, op_id: int) -> BulkOperation | None:
        return self.get_bulk(op_id)  # the store's lock, held by `atomic`, is the row's

    def update_bulk(self, op_id: int, fields, status: str | None = None) -> int:
        row = self.bulk_ops.get(op_id)
        if row is None or (status is not None and row.status != status):
            return 0
        self._set(row, fields)
        return 1

    def claim_bulk(self, ran_by: str, now, lease_expires_at) -> BulkOperation | None:
        def free(row: BulkOperation) -> bool:
            expired = row.lease_expires_at is not None and row.lease_expires_at < now
            running = row.status == Status.RUNNING
            return row.status == Status.PENDING or running and (expired or row.claimed_by == ran_by)

        rows = sorted(filter(free, self.bulk_ops.values()), key=lambda op: (op.created_at, op.id))
        if not rows:
            return None
        row = rows[0]
        self._set(row, {
            "status": Status.RUNNING, "claimed_by": ran_by, "lease_expires_at": lease_expires_at,
            "started_at": row.started_at or now,
        })  # fmt: skip
        return copied(row)
