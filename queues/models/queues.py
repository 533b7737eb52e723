"""A queue's own rows: its pause (`QueuePause`, present while the queue is paused) and its
configuration (`QueueConfig`: how many of its jobs may run at once, and how fast they may
start). Both are keyed by the queue's name and written through `JobQueue`."""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils import timezone

from queues.models.fields import MAX_QUEUE_NAME_LENGTH


class QueuePause(models.Model):
    queue_name = models.CharField(max_length=MAX_QUEUE_NAME_LENGTH, primary_key=True)
    paused_at = models.DateTimeField(default=timezone.now)
    paused_by = models.CharField(max_length=255, null=True, blank=True)
    reason = models.TextField(null=True, blank=True)

    class Meta:
        ordering = ["queue_name"]

    def __str__(self) -> str:
        return f"{self.queue_name} (paused)"


class QueueConfig(models.Model):
    """A queue's configuration, set with `JobQueue.queue_config`: `max_running`, the most jobs
    of the queue Running at once across every worker process and host (None: no limit). A
    limited queue's claims lock this row (see `queues.engine.limits`), so they take turns."""

    queue_name = models.CharField(max_length=MAX_QUEUE_NAME_LENGTH, primary_key=True)
    max_running = models.PositiveIntegerField(null=True, blank=True)
    #: The rate: at most `rate_limit` jobs claimed in each window of `rate_period` seconds
    #: (both None: no rate). The bucket of the current window is `rate_tokens`, the claims
    #: it has left, refilled at `rate_refilled_at` (the window's start); see queues.engine.limits.
    rate_limit = models.PositiveIntegerField(null=True, blank=True)
    rate_period = models.FloatField(null=True, blank=True)
    rate_tokens = models.PositiveIntegerField(default=0)
    rate_refilled_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(default=timezone.now)
    updated_by = models.CharField(max_length=255, null=True, blank=True)

    class Meta:
        ordering = ["queue_name"]
        constraints = [
            models.CheckConstraint(
                condition=Q(max_running__isnull=True) | Q(max_running__gte=1),
                name="queueconfig_max_running_positive",
            ),
            models.CheckConstraint(
                condition=Q(rate_limit__isnull=True, rate_period__isnull=True)
                | Q(rate_limit__gte=1, rate_period__gt=0),
                name="queueconfig_rate_whole",
            ),
        ]

    def __str__(self) -> str:
        parts = [] if self.max_running is None else [f"at most {self.max_running} running"]
        if self.rate is not None:
            parts.append(f"{self.rate_limit} per {self.rate_period:g} s")
        return f"{self.queue_name} ({', '.join(parts) or 'no limit'})"

    @property
    def rate(self) -> tuple[int, float] | None:
        """(jobs, per seconds), or None."""
        if self.rate_limit is None or self.rate_period is None:
            return None
        return (self.rate_limit, self.rate_period)
