"""Deleting jobs (`Deletes`, mixed into `JobQueue`): one, or a batch of ids in one transaction,
never a Running one. Their dependency edges and history go with them, the dependents that
waited only for them are released, and their batches' and workflows' tallies follow. A whole
batch or workflow is deleted through these (`queues.engine.deletion`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from uuid import UUID

from queues.engine import effects, transitions
from queues.engine.core import QueuePart
from queues.engine.deletion import JobDeletion
from queues.models import Job
from queues.store import Match
from queues.validation import parse_job_id


class Deletes(QueuePart):
    """`JobQueue`'s deletions of jobs."""

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
            doomed, refused, kept = transitions.sort_out(transitions.DELETE, locked, where)
            if doomed:
                self._delete_locked(doomed, now)
            return JobDeletion(
                deleted=[job.id for job in doomed],
                refused=list(refused),
                kept=kept,
                missing=len(ids) - len(locked),
            )

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
        effects.apply_tallies(self.store, changes, now, type(self), deleted=True)
