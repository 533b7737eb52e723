"""The memory store's archive: `ArchivedJob` rows packed as the SQL store packs them
(`queues.store.archived`), moved and restored in one undoable transaction each. A part of
`MemoryStore` (`queues.store.memory.store`). See docs/design/maintenance.md."""

from __future__ import annotations

from uuid import UUID

from queues.models import ArchivedJob
from queues.store.archived import archive_row, group_open, unpack_row, waited_for
from queues.store.memory.tables import MISSING, copied


class MemoryArchive:
    """The archive of `MemoryStore` (whose `MemoryTables` give the tables, `_set` and
    `_put`; `MemoryRows` gives `insert_jobs`, `insert_attempts` and `_delete_rows`)."""

    @property
    def _archive(self) -> dict[UUID, ArchivedJob]:
        return self.__dict__.setdefault("archived", {})

    def _archivable(self, job) -> bool:
        """The part of `Archivable` that a row alone cannot tell, as its query asks it."""
        statuses = (self.jobs[c].status for c in self.children.get(job.id, []) if c in self.jobs)
        group = group_open(self.batches.get(job.batch_id), self.workflows.get(job.workflow_id))
        return not group and not waited_for(statuses)

    def archive_selected(self, selection, limit: int, now) -> list[UUID]:
        rows = [job for job in self._selected(selection) if self._archivable(job)]
        rows = selection.sort_out(rows)[:limit]
        for job in rows:
            children = list(self.children.get(job.id, []))
            history = list(self.attempts.get(job.id, []))
            self._put(self._archive, job.id, archive_row(job, history, children, now))
        self._delete_rows(rows)
        return [job.id for job in rows]

    def restore_archived(self, ids) -> list[UUID]:
        found = [self._archive[i] for i in sorted(set(ids), key=str) if i in self._archive]
        unpacked = [unpack_row(row) for row in found if row.id not in self.jobs]
        held = {job.unique_slot for job in self.jobs.values() if job.unique_slot}
        for item in unpacked:
            job = item.job
            job.batch_id = job.batch_id if job.batch_id in self.batches else None
            job.workflow_id = job.workflow_id if job.workflow_id in self.workflows else None
            job.unique_slot = None if job.unique_slot in held else job.unique_slot
            held.add(job.unique_slot)  # two restored jobs with one slot: the first has it
            # Its edges to the jobs still here (parents as insert_jobs writes them).
            parents = [p for p in (UUID(p) for p in job.depends_on) if p in self.jobs]
            self.insert_jobs([job])
            self._put(self.parents, job.id, parents)
            for parent in {UUID(p) for p in job.depends_on} - set(parents):
                self._put(self.children, parent, MISSING)
            for child in item.dependents:
                if child in self.jobs:
                    self._put(self.children, job.id, [*self.children.get(job.id, []), child])
                    self._put(self.parents, child, [*self.parents.get(child, []), job.id])
            if item.attempts:
                self.insert_attempts(item.attempts)
            self._put(self._archive, job.id, MISSING)
        return [item.job.id for item in unpacked]

    def get_archived(self, job_id) -> ArchivedJob | None:
        row = self._archive.get(job_id)
        return None if row is None else copied(row)

    def vacuum_jobs(self) -> None:
        return None  # nothing to reclaim in a dict
