"""The archive (`Archives`, mixed into `JobQueue`): finished jobs moved out of the jobs table
a bounded batch per transaction, read back, and restored as they were. Which jobs may go is
`queues.store.archived.Archivable`'s rule; the pruner and `manage.py jobs archive` call
`archive_jobs`. See docs/design/maintenance.md."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import timedelta
from functools import partial
from uuid import UUID

from django.db import IntegrityError

from queues.engine import unique
from queues.engine.core import QueuePart
from queues.store.archived import Archivable, Archived, unpack_row
from queues.validation import parse_job_id, validate_queue_name

#: Jobs per transaction: each one short, and its rows few enough to hold in memory.
ARCHIVE_BATCH = 1000
#: Restores tried while enqueues keep taking the unique keys of the jobs being restored.
RESTORE_TRIES = 3


def _whole(value, name: str, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a whole number above 0, not {value!r}")


class Archives(QueuePart):
    """`JobQueue`'s archive."""

    def archive_jobs(
        self,
        older_than: timedelta,
        *,
        queue_name: str | None = None,
        limit: int | None = None,
        batch_size: int = ARCHIVE_BATCH,
        progress: Callable[[int], None] | None = None,
    ) -> int:
        """Move the jobs that finished longer than `older_than` ago and may be archived
        (`Archivable`; of `queue_name` only, if given) to the archive, `batch_size` per
        transaction, `limit` at most (None: all); how many. `progress` gets the running
        total after each transaction. Safe beside another archiver: each skips the rows the
        other holds."""
        if not isinstance(older_than, timedelta) or older_than < timedelta(0):
            raise ValueError(f"older_than must be a timedelta of 0 or more, not {older_than!r}")
        _whole(batch_size, "batch_size")
        _whole(limit, "limit", allow_none=True)
        if queue_name is not None:
            validate_queue_name(queue_name)
        # A job that still holds its unique key stays: archived, it would free the key.
        selection = Archivable(self.now() - older_than, queue_name, self._holds_key)
        total = 0
        while limit is None or total < limit:
            size = batch_size if limit is None else min(batch_size, limit - total)
            staying = len(selection.staying)
            moved = self._atomic(partial(self.store.archive_selected, selection, size, self.now()))
            total += len(moved)
            if progress is not None and moved:
                progress(total)
            if len(moved) + len(selection.staying) - staying < size:
                break
        return total

    def _holds_key(self, job) -> bool:
        return unique.holds(job, self.now())

    def count_archivable(self, older_than: timedelta, queue_name: str | None = None) -> int:
        """How many jobs `archive_jobs` would consider (their group and dependents aside on
        the memory store); one read."""
        return self.store.count_selected(Archivable(self.now() - older_than, queue_name))

    def get_archived_job(self, job_id: UUID | str) -> Archived | None:
        """The archived job as it was (`.job`, `.attempts`: its error history,
        `.archived_at`), or None if it is not in the archive. `get_job` never looks here."""
        row = self.store.get_archived(parse_job_id(job_id))
        return None if row is None else unpack_row(row)

    def restore(self, job_ids: Iterable[UUID | str]) -> list[UUID]:
        """Put archived jobs back in the jobs table as they were (status, times, result,
        error history), in one transaction; the ids restored (an id not in the archive is
        left out). The job counts take them back; completions and failures are not counted
        twice."""
        ids = sorted({parse_job_id(job_id) for job_id in job_ids}, key=str)
        if not ids:
            return []
        for _ in range(RESTORE_TRIES - 1):
            try:
                return self._atomic(lambda: self.store.restore_archived(ids))
            except IntegrityError:
                # An enqueue took a restored job's unique key after the restore looked: the
                # next try sees it, and that job comes back without its slot.
                continue
        return self._atomic(lambda: self.store.restore_archived(ids))

    def vacuum_jobs(self) -> None:
        """After a large archive run: let the database reclaim the deleted rows' space now
        (PostgreSQL: VACUUM ANALYZE the jobs table; elsewhere nothing)."""
        self.store.vacuum_jobs()
