"""The archive of finished jobs (`ArchivedJob`): a job moved out of the hot jobs table, with
the columns that searches and pages filter by as real, indexed columns, and the rest of its
row, its error history and its dependents packed into one blob (`queues.store.archived`
packs it: zlib-compressed JSON where that pays). See docs/design/tables.md."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from queues.enums import PRIORITY_CHOICES, JobPriority, JobStatus
from queues.models.fields import MAX_QUEUE_NAME_LENGTH, PortableIndex


class ArchivedJob(models.Model):
    """A finished job as it was when archived. `data` holds every column of its row (so a
    restore puts it back as it was), its failed attempts and the ids of its dependents."""

    id = models.UUIDField(primary_key=True, editable=False)
    queue_name = models.CharField(max_length=MAX_QUEUE_NAME_LENGTH)
    status = models.CharField(max_length=16, choices=JobStatus.choices)
    priority = models.SmallIntegerField(choices=PRIORITY_CHOICES, default=JobPriority.NORMAL)
    attempts = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField()
    #: When it finished: its completed_at, failed_at or timed_out_at (the first set).
    finished_at = models.DateTimeField()
    archived_at = models.DateTimeField()
    # Plain ids, not foreign keys: a batch or workflow may be purged while its jobs stay here.
    batch_id = models.UUIDField(null=True, blank=True)
    workflow_id = models.UUIDField(null=True, blank=True)
    unique_key = models.CharField(max_length=255, null=True, blank=True)
    tags = models.JSONField(default=list, blank=True)
    #: How many failed attempts `data` holds (the page's count, without unpacking).
    failures = models.PositiveIntegerField(default=0)
    #: One byte that says how the rest is stored (b"z": zlib of JSON; b"j": JSON), then it.
    data = models.BinaryField()

    class Meta:
        indexes = [
            # A queue's archived jobs by status, newest finished first.
            models.Index(fields=["queue_name", "status", "finished_at"], name="archived_queue"),
            models.Index(fields=["finished_at"], name="archived_finished"),
            models.Index(fields=["created_at", "id"], name="archived_created"),
            models.Index(fields=["archived_at"], name="archived_at"),
            # Most jobs have none of these: partial where the database has them.
            PortableIndex(
                fields=["batch_id"], condition=Q(batch_id__isnull=False), name="archived_batch"
            ),
            PortableIndex(
                fields=["workflow_id"],
                condition=Q(workflow_id__isnull=False),
                name="archived_workflow",
            ),
            PortableIndex(
                fields=["unique_key"],
                condition=Q(unique_key__isnull=False),
                name="archived_unique_key",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.id} ({self.queue_name}, {self.status}, archived)"

    @classmethod
    def check(cls, **kwargs):
        # MySQL/MariaDB drop a PortableIndex's condition on purpose (models.W037), as `Job`'s.
        return [error for error in super().check(**kwargs) if error.id != "models.W037"]
