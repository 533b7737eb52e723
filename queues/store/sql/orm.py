"""The SQL store's rows through the ORM: the reads and writes of jobs by a `Match`, the error
history, the dependency edges, batches and workflows, pauses, queue configurations, reaper
runs and worker processes. A part of `SqlStore` (`queues.store.sql.store`). See
docs/design/store.md."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping

from django.db.models import Q

from queues.enums import FAILURE_STATUSES, JobStatus, PartialFailureMode
from queues.models import (
    Batch,
    FailedAttempt,
    Job,
    JobDependency,
    QueueConfig,
    QueuePause,
    ReaperRun,
    WorkerProcess,
)
from queues.store.counters.counts import counts_by_queue
from queues.store.match import Group, Match
from queues.store.sql import group_rows
from queues.tags import JobTag, tag_rows


class SqlRows:
    """The ORM's rows of `SqlStore` (which gives `using`)."""

    # Jobs -------------------------------------------------------------------------------
    def replace_tags(self, job: Job) -> None:
        tags = JobTag.objects.using(self.using)
        tags.filter(job_id=job.id).delete()
        tags.bulk_create(tag_rows([job]))

    def _jobs(self, match: Match | None = None):
        jobs = Job.objects.using(self.using)
        if match is None:
            return jobs
        lookups = {
            "id__in": None if match.ids is None else list(match.ids),
            "queue_name": match.queue_name,
            "status__in": match.statuses(),
            "run_token": match.run_token,
            "batch_id": match.batch_id,
            "workflow_id": match.workflow_id,
            "dependency_status": match.dependency_status,
            "claimed_by": match.claimed_by,
            "unique_slot__in": None if match.unique_slots is None else list(match.unique_slots),
            # One row per (job, tag): the join cannot repeat a job.
            "tag_rows__tag": match.tag,
        }
        return jobs.filter(**{k: v for k, v in lookups.items() if v is not None})

    def find_jobs(self, match: Match, limit: int | None = None) -> list[Job]:
        jobs = self._jobs(match)
        return list(jobs if limit is None else jobs[:limit])

    def lock_jobs(self, match: Match) -> list[Job]:
        return list(self._jobs(match).select_for_update().order_by("id"))

    def update_jobs(self, match: Match, fields: Mapping) -> int:
        return self._jobs(match).update(**fields)

    def delete_jobs(self, match: Match) -> int:
        # Django deletes the dependency edges and the history rows (on_delete=CASCADE: one
        # DELETE each) in the same transaction. Its collector reads the rows it deletes: the
        # ids alone are enough (the whole rows cost a third of a 1,000-job purge's time).
        _, deleted = self._jobs(match).only("id").delete()
        return deleted.get(Job._meta.label, 0)

    def count_jobs(self, queue: str) -> dict[str, int]:
        # The trigger-kept JobCount rows: a few rows, never a scan of the jobs table.
        return counts_by_queue(self.using, queue).get(queue) or dict.fromkeys(JobStatus.values, 0)

    def declared_jobs(self) -> list[Job]:
        # Two ranges of the (recurring, next_run_at) index, as the recurring page reads it
        # (MySQL and MariaDB have it without its cron_schedule condition): a disabled
        # recurring job keeps its next run, a plain job has none.
        recurring = Q(recurring=True) | Q(recurring=False, next_run_at__isnull=False)
        jobs = self._jobs().filter(recurring, cron_schedule__isnull=False)
        return list(jobs.filter(schedule_name__isnull=False))

    # The error history ------------------------------------------------------------------
    def _attempts(self):
        return FailedAttempt.objects.using(self.using)

    def find_attempts(self, job_id) -> list[FailedAttempt]:
        return list(self._attempts().filter(job_id=job_id).order_by("id"))

    def update_attempt(self, job_id, token, fields: Mapping) -> int:
        return self._attempts().filter(job_id=job_id, run_token=token).update(**fields)

    # Dependencies -----------------------------------------------------------------------
    def _edges(self):
        return JobDependency.objects.using(self.using)

    def dependents(self, ids: Collection[uuid.UUID]) -> set[uuid.UUID]:
        return set(self._edges().filter(parent_id__in=list(ids)).values_list("job_id", flat=True))

    def dependents_of(self, ids: Collection[uuid.UUID]) -> dict[uuid.UUID, set[uuid.UUID]]:
        children: dict[uuid.UUID, set[uuid.UUID]] = {}
        edges = self._edges().filter(parent_id__in=list(ids)).values_list("parent_id", "job_id")
        for parent, child in edges:
            children.setdefault(parent, set()).add(child)
        return children

    def blocked(self, ids: Collection[uuid.UUID]) -> set[uuid.UUID]:
        waiting = self._edges().filter(job_id__in=list(ids))
        unfinished = waiting.exclude(parent__status=JobStatus.COMPLETED)
        return set(unfinished.values_list("job_id", flat=True))

    # Batches and workflows --------------------------------------------------------------
    def insert_group(self, row: Group) -> None:
        row.save(using=self.using, force_insert=True)

    def get_group(self, model: type[Group], group_id) -> Group | None:
        return model.objects.using(self.using).filter(id=group_id).first()

    def lock_group(self, model: type[Group], group_id) -> Group | None:
        return group_rows.lock_row(model, self.using, group_id)

    def fail_fast_batches(self, ids: Collection[uuid.UUID]) -> set[uuid.UUID]:
        if not ids:
            return set()  # MySQL has no empty IN ()
        rows = Batch.objects.using(self.using).filter(
            id__in=list(ids), failure_mode=PartialFailureMode.FAIL_FAST
        )
        return set(rows.values_list("id", flat=True))

    def update_group(self, model: type[Group], group_id, fields: Mapping) -> None:
        group_rows.update_row(model, self.using, group_id, fields)

    def delete_group(self, model: type[Group], group_id) -> None:
        # The cascade reaches the jobs still in it (the engine deleted them first).
        model.objects.using(self.using).filter(id=group_id).delete()

    def first_failure(self, batch_id, excluding: str):
        failures = self._jobs(Match(batch_id=batch_id, status=FAILURE_STATUSES))
        first = failures.exclude(error_message__startswith=excluding)
        return first.values_list("id", flat=True).first()

    # Pauses and reaper runs -------------------------------------------------------------
    def _pauses(self):
        return QueuePause.objects.using(self.using)

    def pause(self, row: QueuePause) -> None:
        fields = {"paused_at": row.paused_at, "paused_by": row.paused_by, "reason": row.reason}
        self._pauses().update_or_create(queue_name=row.queue_name, defaults=fields)

    def resume(self, queue: str) -> None:
        self._pauses().filter(queue_name=queue).delete()

    def is_paused(self, queue: str) -> bool:
        return self._pauses().filter(queue_name=queue).exists()

    def get_pause(self, queue: str) -> QueuePause | None:
        return self._pauses().filter(queue_name=queue).first()

    # Queue configurations ---------------------------------------------------------------
    def _configs(self):
        return QueueConfig.objects.using(self.using)

    def get_queue_config(self, queue: str) -> QueueConfig | None:
        return self._configs().filter(queue_name=queue).first()

    def set_queue_config(self, queue: str, fields: Mapping) -> QueueConfig:
        row, _ = self._configs().update_or_create(queue_name=queue, defaults=fields)
        return row

    def insert_reaper_run(self, row: ReaperRun) -> None:
        row.save(using=self.using)

    # Worker processes -------------------------------------------------------------------
    def _processes(self):
        return WorkerProcess.objects.using(self.using)

    def register_process(self, row: WorkerProcess) -> None:
        row.save(using=self.using, force_insert=True)

    def beat_process(self, process_id, held: int, running: int, processed: int, at) -> bool:
        counts = {"jobs_held": held, "jobs_running": running, "jobs_processed": processed}
        return bool(self._processes().filter(id=process_id).update(**counts, last_heartbeat_at=at))

    def unregister_process(self, process_id) -> None:
        self._processes().filter(id=process_id).delete()

    def get_process(self, process_id) -> WorkerProcess | None:
        return self._processes().filter(id=process_id).first()

    def live_processes(self, since, limit: int) -> list[WorkerProcess]:
        rows = self._processes().filter(last_heartbeat_at__gte=since)
        return list(rows.order_by("-last_heartbeat_at")[:limit])
