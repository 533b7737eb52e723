"""The rows of the system's own work: the reaper's passes (`ReaperRun`), the live worker
processes (`WorkerProcess`, kept by their heartbeats) and the operators' bulk operations
(`BulkOperation`, carried out by a worker's maintenance thread, `queues.ops.bulk`)."""

from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone

from queues.models.fields import MAX_QUEUE_NAME_LENGTH


class ReaperRun(models.Model):
    """One pass of the stale-job reaper: what it took back and what it declared dead."""

    ran_at = models.DateTimeField(default=timezone.now, db_index=True)
    ran_by = models.CharField(max_length=255, blank=True, default="")
    queue_name = models.CharField(max_length=MAX_QUEUE_NAME_LENGTH, null=True, blank=True)
    requeued_ids = models.JSONField(default=list, blank=True)
    dead_ids = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["-ran_at", "-id"]

    def __str__(self) -> str:
        return f"reaper run at {self.ran_at:%Y-%m-%d %H:%M:%S}"

    @property
    def requeued_count(self) -> int:
        return len(self.requeued_ids)

    @property
    def dead_count(self) -> int:
        return len(self.dead_ids)


class WorkerProcess(models.Model):
    """One live `runworker` process, kept up to date by its heartbeat."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    hostname = models.CharField(max_length=255)
    pid = models.PositiveIntegerField()
    queues = models.JSONField(default=list)
    settings = models.JSONField(default=dict, blank=True)
    batch_size = models.PositiveIntegerField(default=1)
    concurrency = models.PositiveIntegerField(default=1)
    jobs_held = models.PositiveIntegerField(default=0)
    jobs_running = models.PositiveIntegerField(default=0)
    jobs_processed = models.PositiveBigIntegerField(default=0)
    started_at = models.DateTimeField(default=timezone.now)
    last_heartbeat_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["hostname", "pid"]

    def __str__(self) -> str:
        return f"{self.hostname}:{self.pid}"


class BulkOperation(models.Model):
    """An operator's "retry / cancel / delete all N matching": the filter (as the page had
    it), who asked, and how far it got. A `runworker`'s maintenance thread carries it out a
    page of ids per transaction (`queues.ops.bulk`), so a million jobs never hold a request or a
    lock for long; the page polls this row for its progress."""

    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        COMPLETED = "completed"
        CANCELLED = "cancelled"
        FAILED = "failed"

    ACTIONS = [("retry", "retry"), ("cancel", "cancel"), ("delete", "delete")]

    action = models.CharField(max_length=16, choices=ACTIONS)
    filter = models.JSONField(default=dict)
    description = models.TextField(blank=True, default="")
    created_by = models.CharField(max_length=255)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    total = models.PositiveBigIntegerField(default=0)  # matching when it was confirmed
    done = models.PositiveBigIntegerField(default=0)
    skipped = models.PositiveBigIntegerField(default=0)  # no longer matching, or refused
    gone = models.PositiveBigIntegerField(default=0)  # deleted meanwhile
    cursor = models.CharField(max_length=64, blank=True, default="")  # the last id acted on
    cancel_requested = models.BooleanField(default=False)
    claimed_by = models.CharField(max_length=255, blank=True, default="")
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["status", "created_at"], name="bulk_status_created")]

    def __str__(self) -> str:
        return f"bulk {self.action} #{self.pk} by {self.created_by} ({self.status})"

    @property
    def finished(self) -> bool:
        return self.status in (self.Status.COMPLETED, self.Status.CANCELLED, self.Status.FAILED)

    @property
    def done_word(self) -> str:
        return {"retry": "retried", "cancel": "cancelled", "delete": "deleted"}[self.action]

    @property
    def processed(self) -> int:
        return self.done + self.skipped + self.gone

    @property
    def percent(self) -> int:
        if self.finished and self.status == self.Status.COMPLETED:
            return 100
        return min(100, (100 * self.processed) // self.total) if self.total else 0
