"""The SQL store's archive: moving finished jobs to `ArchivedJob` a bounded batch per
transaction (rows locked FOR UPDATE SKIP LOCKED where the database has it, so archivers do
not collide), restoring them, and reading one. The delete triggers keep the job counts; a
restore takes back the completions and failed attempts its inserts count again. A part of
`SqlStore` (`queues.store.sql.store`). See docs/design/maintenance.md."""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Collection
from datetime import datetime
from functools import partial

from django.db.models import Exists, F, OuterRef

from queues.enums import JobStatus
from queues.models import (
    ArchivedJob,
    AttemptCount,
    Batch,
    CompletionCount,
    FailedAttempt,
    Job,
    JobDependency,
    Workflow,
)
from queues.store.archived import archive_columns, unpack_row
from queues.store.catalogue import run
from queues.store.counters.completions import minute_of
from queues.tags import JobTag, tag_rows

#: Rows per INSERT of the archive's rows and of restored history.
_INSERT_BATCH = 500


class SqlArchive:
    """The archive of `SqlStore` (which gives `using`, `connection`, `cursor`, `queries`,
    `statements`, the parameters' adapters and `insert_job_rows`)."""

    def archive_selected(self, selection, limit: int, now: datetime) -> list[uuid.UUID]:
        jobs = self._lock_some(selection, limit)  # whole rows: every column is archived
        if hasattr(selection, "sort_out"):
            jobs = selection.sort_out(jobs)
        if not jobs:
            return []
        ids = [job.id for job in jobs]
        history: dict[uuid.UUID, list[FailedAttempt]] = {}
        with_history = [job.id for job in jobs if job.has_history]
        if with_history:
            attempts = FailedAttempt.objects.using(self.using).filter(job_id__in=with_history)
            for attempt in attempts.order_by("id"):
                history.setdefault(attempt.job_id, []).append(attempt)
        dependents: dict[uuid.UUID, list[uuid.UUID]] = {}
        with_dependents = [job.id for job in jobs if job.has_dependents]
        if with_dependents:
            edges = JobDependency.objects.using(self.using).filter(parent_id__in=with_dependents)
            for parent, child in edges.values_list("parent_id", "job_id"):
                dependents.setdefault(parent, []).append(child)
        rows = [
            archive_columns(j, history.get(j.id, []), dependents.get(j.id, []), now) for j in jobs
        ]
        # One statement a table, the jobs' last: their history, tags and edges, then the
        # rows (the delete triggers take them off the counts). Not the ORM's delete, which
        # read the jobs' ids back and deleted them a hundred a statement. Any archive row
        # of these ids goes first: a job restored and archived again.
        params = {"ids": self.uuids(ids)}
        with self.cursor() as cursor:
            for statement in self.statements["delete_archived_jobs"]:
                cursor.execute(statement, params)
        self.insert_archived(rows)
        return ids

    def insert_archived(self, rows: list[dict]) -> None:
        """`archive_columns`' rows into the archive: the catalogue's `insert_archived`, a
        row of parameters each (the driver sends them together); the PostgreSQL store
        sends them as one."""
        ids = self.adapt_ids([row["id"] for row in rows])
        dt = self.dt
        tags = ArchivedJob._meta.get_field("tags")  # the JSON text Django writes
        params = [
            {
                **row,
                "id": job_id,
                "batch_id": self.uuid(row["batch_id"]),
                "workflow_id": self.uuid(row["workflow_id"]),
                "created_at": dt(row["created_at"]),
                "finished_at": dt(row["finished_at"]),
                "archived_at": dt(row["archived_at"]),
                "tags": json.dumps(row["tags"], cls=tags.encoder),
            }
            for row, job_id in zip(rows, ids, strict=True)
        ]
        for start in range(0, len(params), _INSERT_BATCH):
            with self.cursor() as cursor:
                cursor.executemany(
                    self.queries["insert_archived"], params[start : start + _INSERT_BATCH]
                )

    def _lock_some(self, selection, limit: int) -> list[Job]:
        """Up to `limit` of the selection's rows, locked, skipping those another
        transaction holds; by its `parts` in turn when it has them (`Archivable`). Each
        row says whether it has history and dependents: most have neither, and their
        reads are skipped."""
        skip = self.connection.features.has_select_for_update_skip_locked
        parts = selection.parts(self.using) if hasattr(selection, "parts") else None
        jobs: list[Job] = []
        for rows in parts or [selection.rows(self.using).order_by()]:
            rows = rows.annotate(
                has_history=Exists(FailedAttempt.objects.filter(job_id=OuterRef("pk"))),
                has_dependents=Exists(JobDependency.objects.filter(parent_id=OuterRef("pk"))),
            )
            if skip:
                rows = rows.select_for_update(skip_locked=True)
            jobs += rows[: limit - len(jobs)]
            if len(jobs) == limit:
                break
        done = [job.completed_at for job in jobs if job.status == JobStatus.COMPLETED]
        if parts and done:  # once committed: a batch rolled back is walked again
            self.on_commit(partial(setattr, selection, "floor", max(done)))
        return jobs

    def restore_archived(self, ids: Collection[uuid.UUID]) -> list[uuid.UUID]:
        if not ids:
            return []
        archive = ArchivedJob.objects.using(self.using)
        rows = list(archive.select_for_update().filter(pk__in=list(ids)).order_by("pk"))
        taken = set(
            Job.objects.using(self.using)
            .filter(pk__in=[row.id for row in rows])
            .values_list("pk", flat=True)
        )
        rows = [row for row in rows if row.id not in taken]
        if not rows:
            return []
        unpacked = [unpack_row(row) for row in rows]
        jobs = [item.job for item in unpacked]
        self._fit_restored(jobs)
        self.insert_job_rows(jobs)
        restored = {job.id for job in jobs}
        self._restore_edges(unpacked, restored)
        tags = tag_rows(jobs)
        if tags:
            JobTag.objects.using(self.using).bulk_create(tags, batch_size=_INSERT_BATCH)
        attempts = [a for item in unpacked for a in item.attempts]
        if attempts:
            FailedAttempt.objects.using(self.using).bulk_create(attempts, batch_size=_INSERT_BATCH)
        self._take_back_counts(jobs, attempts)
        archive.filter(pk__in=list(restored)).delete()
        return sorted(restored, key=str)

    def get_archived(self, job_id: uuid.UUID) -> ArchivedJob | None:
        return ArchivedJob.objects.using(self.using).filter(pk=job_id).first()

    def vacuum_jobs(self) -> None:
        run(self.connection, "vacuum_jobs")

    # Restoring --------------------------------------------------------------------------
    def _fit_restored(self, jobs: list[Job]) -> None:
        """A job's row as it was, but for what is gone meanwhile: its batch or workflow
        (purged) and its unique slot (another job holds the key now)."""
        using = self.using
        batches = set(
            Batch.objects.using(using)
            .filter(pk__in=[j.batch_id for j in jobs if j.batch_id])
            .values_list("pk", flat=True)
        )
        workflows = set(
            Workflow.objects.using(using)
            .filter(pk__in=[j.workflow_id for j in jobs if j.workflow_id])
            .values_list("pk", flat=True)
        )
        slots = set(
            Job.objects.using(using)
            .filter(unique_slot__in=[j.unique_slot for j in jobs if j.unique_slot])
            .values_list("unique_slot", flat=True)
        )
        for job in jobs:
            if job.batch_id not in batches:
                job.batch_id = None
            if job.workflow_id not in workflows:
                job.workflow_id = None
            if job.unique_slot in slots:
                job.unique_slot = None
            elif job.unique_slot:
                slots.add(job.unique_slot)  # two restored jobs with one slot: the first has it

    def _restore_edges(self, unpacked, restored: set[uuid.UUID]) -> None:
        """The dependency edges both ways, to the jobs still in the table."""
        pairs = {
            (item.job.id, uuid.UUID(parent)) for item in unpacked for parent in item.job.depends_on
        }
        pairs |= {(child, item.job.id) for item in unpacked for child in item.dependents}
        ends = {end for pair in pairs for end in pair}
        present = set(
            Job.objects.using(self.using).filter(pk__in=list(ends)).values_list("pk", flat=True)
        )
        edges = [
            JobDependency(job_id=child, parent_id=parent)
            for child, parent in sorted(pairs, key=str)
            if child in present and parent in present
        ]
        if edges:
            JobDependency.objects.using(self.using).bulk_create(
                edges, batch_size=_INSERT_BATCH, ignore_conflicts=True
            )

    def _take_back_counts(self, jobs: list[Job], attempts: list[FailedAttempt]) -> None:
        """The insert triggers counted the restored completions and failed attempts again;
        they happened once, when first written: take them back, in this transaction."""
        queue_of = {job.id: job.queue_name for job in jobs}
        done = Counter(
            (job.queue_name, minute_of(job.completed_at)) for job in jobs if job.completed_at
        )
        for (queue, minute), n in done.items():
            self._less(CompletionCount, n, queue_name=queue, minute=minute)
        failed = Counter((queue_of[a.job_id], minute_of(a.failed_at), a.status) for a in attempts)
        for (queue, minute, status), n in failed.items():
            self._less(AttemptCount, n, queue_name=queue, minute=minute, status=status)

    def _less(self, model, n: int, **key) -> None:
        # Any shard: a count is the sum of its shards, and the trigger just added n to one.
        rows = model.objects.using(self.using).filter(**key)
        shard = rows.order_by("-n").values_list("pk", flat=True).first()
        if shard is not None:
            rows.filter(pk=shard).update(n=F("n") - n)
