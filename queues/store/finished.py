"""When a job or a group finished before a time: each rule as a query and as a test of one
row, side by side. A purge selects by the query and asks the test again of each locked row;
the memory store answers by the test. See docs/design/maintenance.md."""

from __future__ import annotations

from datetime import datetime

from django.db.models import Q, QuerySet
from django.db.models.functions import Coalesce

from queues.enums import TERMINAL_STATUSES, BatchStatus, JobStatus, WorkflowStatus
from queues.models import Batch, Job, Workflow

FINISHED_BATCHES = (BatchStatus.COMPLETED, BatchStatus.FAILED, BatchStatus.PARTIALLY_FAILED)
FINISHED_WORKFLOWS = (WorkflowStatus.COMPLETED, WorkflowStatus.FAILED, WorkflowStatus.CANCELLED)
_OTHER_ENDS = sorted(TERMINAL_STATUSES - {JobStatus.COMPLETED})


# Jobs -------------------------------------------------------------------------------------
def finished_at(job: Job) -> datetime | None:
    """When the job finished: the first of its completed_at, failed_at and timed_out_at (as
    `Job.duration` reads it)."""
    return job.completed_at or job.failed_at or job.timed_out_at


def with_finished_at(rows: QuerySet) -> QuerySet:
    """`rows` with the alias `finished_at`: `finished_at` as a query."""
    return rows.alias(finished_at=Coalesce("completed_at", "failed_at", "timed_out_at"))


def finished_before(cutoff: datetime) -> Q:
    """The query of jobs that finished before `cutoff` (a terminal status, Completed ones by
    the (status, completed_at) index), on a queryset `with_finished_at`."""
    return Q(status=JobStatus.COMPLETED, completed_at__lt=cutoff) | Q(
        status__in=_OTHER_ENDS, finished_at__lt=cutoff
    )


def is_finished_before(job: Job, cutoff: datetime) -> bool:
    """`finished_before` as a test of one row."""
    end = finished_at(job)
    return job.status in TERMINAL_STATUSES and end is not None and end < cutoff


# Batches and workflows --------------------------------------------------------------------
def groups_finished_before(using: str, cutoff: datetime) -> list[Batch | Workflow]:
    """The batches and workflows that finished before `cutoff` (`group_finished_before`) and
    whose jobs all finished: what a purge deletes whole."""
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


def group_finished_before(group: Batch | Workflow, cutoff: datetime) -> bool:
    """Whether the group's own row finished before `cutoff` (its jobs aside): a batch by its
    completed_at, a workflow by its completed_at or failed_at, else its created_at."""
    if isinstance(group, Batch):
        end = group.completed_at if group.status in FINISHED_BATCHES else None
    else:
        ended = group.completed_at or group.failed_at or group.created_at
        end = ended if group.status in FINISHED_WORKFLOWS else None
    return end is not None and end < cutoff
