"""The counters' tables, kept by database triggers in the transactions of the writes they
count (`queues.store.counters`): jobs per queue and status, completions and failed attempts
per minute, and their roll-up per hour. Sharded so that concurrent writers do not wait for
one row. See docs/design/tables.md."""

from __future__ import annotations

from django.db import models

from queues.enums import JobStatus
from queues.models.fields import MAX_QUEUE_NAME_LENGTH


class JobCount(models.Model):
    """How many jobs a queue has in a status, kept exact by database triggers (see
    `queues.store.counters.counts`). A (queue, status) is split over shards so that
    concurrent writers do not wait for one row; its count is the sum of its shards."""

    queue_name = models.CharField(max_length=MAX_QUEUE_NAME_LENGTH)
    status = models.CharField(max_length=16)
    shard = models.SmallIntegerField(default=0)
    n = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["queue_name", "status", "shard"], name="job_count_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.queue_name} {self.status}: {self.n}"


class CompletionCount(models.Model):
    """How many jobs of a queue completed in one minute (UTC), kept by database triggers in
    the transaction of each completion (see `queues.store.counters.completions`). Sharded
    like `JobCount`; a minute's count is the sum of its shards. Minutes older than a day are
    pruned."""

    queue_name = models.CharField(max_length=MAX_QUEUE_NAME_LENGTH)
    minute = models.DateTimeField()
    shard = models.SmallIntegerField(default=0)
    n = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["queue_name", "minute", "shard"], name="completion_count_unique"
            ),
        ]
        # The overview reads a range of minutes of every queue; the pruner deletes by minute.
        indexes = [models.Index(fields=["minute"], name="completion_count_minute")]

    def __str__(self) -> str:
        return f"{self.queue_name} {self.minute:%Y-%m-%d %H:%M}: {self.n}"


class AttemptCount(models.Model):
    """How many failed attempts of a queue ended in one minute (UTC) with the job in one
    status, kept by database triggers on the error history's inserts (see
    `queues.store.counters.attempt_counts`). The status, not a "failure" or "retry" verdict:
    which statuses are which is `queues.store.counters.rollup`'s rule, kept there only.
    Sharded like `CompletionCount`; pruned with it."""

    queue_name = models.CharField(max_length=MAX_QUEUE_NAME_LENGTH)
    minute = models.DateTimeField()
    status = models.CharField(max_length=16, choices=JobStatus.choices)
    shard = models.SmallIntegerField(default=0)
    n = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["queue_name", "minute", "status", "shard"], name="attempt_count_unique"
            ),
        ]
        # The history reads a range of minutes of every queue; the pruner deletes by minute.
        indexes = [models.Index(fields=["minute"], name="attempt_count_minute")]

    def __str__(self) -> str:
        return f"{self.queue_name} {self.minute:%Y-%m-%d %H:%M} {self.status}: {self.n}"


class HourlyCount(models.Model):
    """One queue's completions, failures and retries in one hour (UTC), summed from the
    per-minute counters (`CompletionCount`, `AttemptCount`) by
    `queues.store.counters.rollup.roll_up`. Kept as long as the jobs are (the pruner's
    `older_than`)."""

    queue_name = models.CharField(max_length=MAX_QUEUE_NAME_LENGTH)
    hour = models.DateTimeField()
    completed = models.BigIntegerField(default=0)
    failed = models.BigIntegerField(default=0)
    retried = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["queue_name", "hour"], name="hourly_count_unique")
        ]
        # The history page reads a range of hours of every queue; the pruner deletes by hour.
        indexes = [models.Index(fields=["hour"], name="hourly_count_hour")]

    def __str__(self) -> str:
        return f"{self.queue_name} {self.hour:%Y-%m-%d %H}h: {self.completed}/{self.failed}"
