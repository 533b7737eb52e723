"""What an enqueue writes (`Enqueues`, mixed into `JobQueue`): new jobs checked, their unique
keys taken (`unique`), their dependencies settled and their batch's or workflow's tallies
moved, in one transaction. A job without a unique key pays nothing for keys: no read before
its insert, no savepoint. See docs/design/engine.md ("Enqueues").
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from uuid import UUID

from django.db import IntegrityError

from queues import signals, tracing
from queues.clock import SystemClock
from queues.engine import callbacks, effects, unique
from queues.engine.core import QueuePart
from queues.engine.tallies import Change, empty_group_fields
from queues.engine.unique import EnqueueResult
from queues.exceptions import InvalidBatch, InvalidJob, InvalidWorkflow
from queues.groups import JobBatch, JobGroup, settle_dependencies
from queues.models import Job
from queues.store import Match
from queues.validation import prepare_jobs


class Enqueues(QueuePart):
    """`JobQueue`'s enqueues."""

    def enqueue(self, job: Job) -> UUID:
        """Insert one job; the id of the job that holds its unique key if one does."""
        return self.enqueue_many_unique([job])[0].id

    def enqueue_many(self, jobs: Iterable[Job]) -> list[UUID]:
        return [result.id for result in self.enqueue_many_unique(jobs)]

    def enqueue_unique(self, job: Job) -> EnqueueResult:
        """`enqueue`, and whether the job was created (not a duplicate of a job that holds
        its unique key): `job_id, created = queue.enqueue_unique(job)`."""
        return self.enqueue_many_unique([job])[0]

    def enqueue_many_unique(self, jobs: Iterable[Job]) -> list[EnqueueResult]:
        jobs = list(jobs)
        now = self.now()
        self._prepare(jobs, now)
        with tracing.enqueue_spans(jobs):
            duplicates = self._insert_atomic(lambda: self._insert(jobs, now), InvalidJob, "a job")
        return [EnqueueResult(duplicates.get(j.id, j.id), j.id not in duplicates) for j in jobs]

    def enqueue_workflow(self, group: JobGroup) -> UUID:
        group.validate()
        return self._enqueue_group(group, InvalidWorkflow, "a workflow or job")

    def enqueue_batch(self, batch: JobBatch) -> UUID:
        batch.validate()
        return self._enqueue_group(batch, InvalidBatch, "a batch or job")

    def _enqueue_group(self, group: JobGroup | JobBatch, error, what: str) -> UUID:
        now = self.now()
        self._prepare(group.jobs, now)
        row = group.row(now)

        def work():
            self.store.insert_group(row)
            duplicates = self._insert(group.jobs, now)
            if len(duplicates) == len(group.jobs):
                # Every job was a duplicate: a group with nothing to do is done, and its
                # callbacks due at once.
                fields = empty_group_fields(row, now)
                fields = callbacks.with_callbacks(self.store, row, fields, now, type(self))
                self.store.update_group(type(row), row.id, fields)

        with tracing.enqueue_spans(group.jobs):
            self._insert_atomic(work, error, what)
        return row.id

    def _insert_atomic(self, work, error, what: str):
        try:
            return self._atomic(work)
        except IntegrityError as exc:
            # Validation ran before: what the store refuses now is an id it already has.
            raise error(f"{what} with the same id already exists") from exc

    def _prepare(self, jobs: Sequence[Job], now: datetime, declared: bool = False) -> None:
        """Check new jobs; `declared` ones are a sync's rows of declared schedules."""
        prepare_jobs(jobs, now, rebase=not isinstance(self.clock, SystemClock))
        unique.prepare(jobs, declared)

    def _insert(self, jobs: list[Job], now: datetime) -> dict[UUID, UUID]:
        """Insert the jobs that hold their keys; the others' ids -> their holders' ids."""
        if all(job.unique_slot is None for job in jobs):
            self._insert_rows(jobs, now)
            return {}
        for race in range(unique.MAX_RACES + 1):
            # A look again after a lost race reads as the first did: under READ COMMITTED it
            # sees the winner without a lock (on MariaDB the failed insert holds a shared
            # lock on the key, and a locking read beside another loser's would deadlock).
            # Only if it still does not (an older snapshot) does it read with a lock.
            locking = race >= 2
            fresh, duplicates = unique.take_slots(self.store, jobs, now, locking)
            try:
                self._insert_rows(fresh, now)
                return duplicates
            except IntegrityError:
                # Another enqueue took a key since it was looked at (the index refused the
                # insert, nothing of it was written): look again, unless an id is taken.
                ids = {job.id for job in fresh}
                if race == unique.MAX_RACES or self.store.find_jobs(Match(ids=ids), limit=1):
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _insert_rows(self, jobs: list[Job], now: datetime) -> None:
        by_id = {str(job.id): job for job in jobs}
        external = {p for job in jobs for p in job.depends_on if p not in by_id}
        parents: dict[str, str] = {}
        if external:
            # Lock the parents so that none finishes between this check and the insert.
            locked = self.store.lock_jobs(Match(ids={UUID(p) for p in external}))
            parents = {str(job.id): job.status for job in locked}
            missing = external - parents.keys()
            if missing:
                raise InvalidWorkflow(f"unknown dependency: {sorted(missing)[0]}")
        settle_dependencies(jobs, by_id, parents, now)
        self.store.insert_jobs(jobs)
        signals.enqueued(self.store, type(self), jobs)
        changes: list[Change] = [
            (job.batch_id, job.workflow_id, None, job.status)
            for job in jobs
            if job.batch_id or job.workflow_id
        ]
        effects.apply_tallies(self.store, changes, now, type(self))
