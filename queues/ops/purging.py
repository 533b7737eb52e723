"""Purging old finished jobs (`manage.py jobs purge`): what "finished before a time" means,
and the purge itself, through the engine's deletes a page of ids per transaction.

A job finished when its status is terminal (Completed, Failed, Dead, TimedOut, Archived), at
its first time of completed_at, failed_at and timed_out_at (as `Job.duration` reads it).
The rule is here twice on purpose, side by side: as a query (the selection reads a million
rows through indexes) and as a test of a locked row (`JobQueue.delete_jobs` asks it again
under the lock, so a job retried since it was read is kept).

What a purge keeps:
- recurring jobs (a schedule's one row, not history);
- the jobs of batches and workflows, alone: a group is purged whole (its row with its jobs,
  through `deletion.delete_group`) once it finished before the time and each of its jobs
  finished; deleting some of its jobs would rewrite its tallies and its status.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Q, QuerySet
from django.db.models.functions import Coalesce

from queues.engine import deletion
from queues.enums import TERMINAL_STATUSES, BatchStatus, JobStatus, WorkflowStatus
from queues.exceptions import InvalidJobTransition, JobNotFound
from queues.models import Batch, Job, Workflow

#: Ids per transaction: short locks, bounded memory, and few enough round trips.
BATCH_SIZE = 1000
FINISHED_BATCHES = (BatchStatus.COMPLETED, BatchStatus.FAILED, BatchStatus.PARTIALLY_FAILED)
FINISHED_WORKFLOWS = (WorkflowStatus.COMPLETED, WorkflowStatus.FAILED, WorkflowStatus.CANCELLED)


def finished_before(cutoff: datetime) -> Q:
    """The query of jobs that finished before `cutoff` (Completed ones by the
    (status, completed_at) index); on a queryset with the alias `finished_at`, as
    `purgeable` makes."""
    others = sorted(TERMINAL_STATUSES - {JobStatus.COMPLETED})
    return Q(status=JobStatus.COMPLETED, completed_at__lt=cutoff) | Q(
        status__in=others, finished_at__lt=cutoff
    )


def is_finished_before(job: Job, cutoff: datetime) -> bool:
    """`finished_before` as a test of one row."""
    end = job.completed_at or job.failed_at or job.timed_out_at
    return job.status in TERMINAL_STATUSES and end is not None and end < cutoff


def purgeable(using: str, cutoff: datetime) -> QuerySet:
    """The jobs a purge deletes one by one: finished before `cutoff`, in no group, not
    recurring."""
    jobs = Job.objects.using(using).alias(
        finished_at=Coalesce("completed_at", "failed_at", "timed_out_at")
    )
    return jobs.filter(
        finished_before(cutoff),
        batch__isnull=True,
        workflow__isnull=True,
        cron_schedule__isnull=True,
    )


def pages(rows: QuerySet, size: int = BATCH_SIZE) -> Iterator[list]:
    """The ids of `rows`, `size` at a time, in the database's id order: each page is one
    indexed read after the last id of the one before (no OFFSET, nothing held between)."""
    last = None
    while True:
        page = rows if last is None else rows.filter(pk__gt=last)
        ids = list(page.order_by("pk").values_list("pk", flat=True)[:size])
        if ids:
            yield ids
        if len(ids) < size:
            return
        last = ids[-1]


def finished_groups(using: str, cutoff: datetime) -> list[Batch | Workflow]:
    """Batches and workflows that finished before `cutoff` and whose jobs all finished."""
    unfinished = Job.objects.using(using).exclude(status__in=TERMINAL_STATUSES)
    batches = Batch.objects.using(using).filter(
        status__in=FINISHED_BATCHES, completed_at__lt=cutoff
    )
    workflows = (
        Workflow.objects.using(using)
        .alias(ended=Coalesce("completed_at", "failed_at", "created_at"))
        .filter(status__in=FINISHED_WORKFLOWS, ended__lt=cutoff)
    )
    return [
        *batches.exclude(id__in=unfinished.filter(batch__isnull=False).values("batch_id")),
        *workflows.exclude(id__in=unfinished.filter(workflow__isnull=False).values("workflow_id")),
    ]


@dataclass
class PurgeResult:
    deleted: int = 0
    kept: int = 0  # no longer finished before the time when locked (retried meanwhile)
    groups: int = 0  # batches and workflows deleted whole, with their jobs
    group_jobs: int = 0
    skipped_groups: list[str] = field(default_factory=list)  # refused: why


def purge(
    queue,
    cutoff: datetime,
    rows: QuerySet,
    *,
    groups: bool = True,
    size: int = BATCH_SIZE,
    progress: Callable[[PurgeResult], None] | None = None,
) -> PurgeResult:
    """Delete `rows` (a selection within `purgeable`) through `queue.delete_jobs`, a page per
    transaction, then (with `groups`) the finished groups; `progress` after each page."""
    result = PurgeResult()
    still = lambda job: is_finished_before(job, cutoff)  # noqa: E731
    for ids in pages(rows, size):
        done = queue.delete_jobs(ids, where=still)
        result.deleted += len(done.deleted)
        result.kept += len(done.kept) + len(done.refused)
        if progress is not None:
            progress(result)
    if groups:
        for group in finished_groups(queue.using, cutoff):
            try:
                jobs = group.total_jobs
                deletion.delete_group(queue, group)
            except (InvalidJobTransition, JobNotFound) as exc:
                result.skipped_groups.append(str(exc))
                continue
            result.groups += 1
            result.group_jobs += jobs
            if progress is not None:
                progress(result)
    return result
