"""The groups of jobs: batches (jobs of one queue, enqueued together) and workflows (jobs
with dependencies between them). Both keep tallies of their jobs, which the engine updates
in the transactions that finish them (`queues.engine.tallies`); their fields, order and
check are written once, in `TalliedGroup`. See docs/design/tables.md."""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q
from django.utils import timezone

from queues.enums import BatchStatus, FailurePolicy, PartialFailureMode, WorkflowStatus


class TalliedGroup(models.Model):
    """A named group of jobs and the tallies of its jobs: how many it has, how many
    completed and how many failed. The rest are pending."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=255)
    total_jobs = models.PositiveIntegerField(default=0)
    completed_jobs = models.PositiveIntegerField(default=0)
    failed_jobs = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    # The callbacks declared at enqueue ({event: the job to enqueue}, `queues.callbacks`),
    # and those enqueued ({event: the callback job's id}): each once, under the row's lock.
    callbacks = models.JSONField(default=dict, blank=True, editable=False)
    callback_jobs = models.JSONField(default=dict, blank=True, editable=False)

    class Meta:
        abstract = True
        ordering = ["-created_at"]
        constraints = [
            # Named per table: batch_tallies_within_total, workflow_tallies_within_total.
            models.CheckConstraint(
                condition=Q(completed_jobs__lte=models.F("total_jobs") - models.F("failed_jobs")),
                name="%(class)s_tallies_within_total",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.status})"

    @property
    def pending_jobs(self) -> int:
        return self.total_jobs - self.completed_jobs - self.failed_jobs


class Batch(TalliedGroup):
    status = models.CharField(
        max_length=20, choices=BatchStatus.choices, default=BatchStatus.PENDING
    )
    failure_mode = models.CharField(
        max_length=20,
        choices=PartialFailureMode.choices,
        default=PartialFailureMode.CONTINUE_ON_ERROR,
    )
    error_summary = models.TextField(null=True, blank=True)

    class Meta(TalliedGroup.Meta):
        verbose_name_plural = "batches"


class Workflow(TalliedGroup):
    status = models.CharField(
        max_length=20, choices=WorkflowStatus.choices, default=WorkflowStatus.RUNNING
    )
    failure_policy = models.CharField(
        max_length=24, choices=FailurePolicy.choices, default=FailurePolicy.FAIL_FAST
    )
    failed_at = models.DateTimeField(null=True, blank=True)
