"""The rows a job has beside its own: its failed attempts (`FailedAttempt`, the error
history) and its tags (`JobTag`, which the tag filters read). Both are written with the write
that makes them and deleted with their job. Their rules are `queues.engine.history`
and `queues.tags`; see docs/design/tables.md."""

from __future__ import annotations

from datetime import timedelta

from django.db import models

from queues.enums import AttemptEnd, HandlerEnd, JobPriority, JobStatus
from queues.models.fields import MAX_QUEUE_NAME_LENGTH, MAX_TAG_LENGTH


class FailedAttempt(models.Model):
    """One failed attempt of a job: when it began, what ended it and when, the worker that
    ran it, the error, the exception's class and its traceback. A table rather than a list
    on the job: a claim returns the job's row, which then would carry every earlier
    traceback."""

    job = models.ForeignKey("queues.Job", on_delete=models.CASCADE, related_name="failed_attempts")
    attempt = models.PositiveIntegerField()
    #: When the attempt began (the job's `started_at` then; a retry clears the job's).
    started_at = models.DateTimeField(null=True, blank=True)
    failed_at = models.DateTimeField()
    ended_by = models.CharField(max_length=16, choices=AttemptEnd.choices)
    #: The job's status once the attempt ended (Pending: it is retried).
    status = models.CharField(max_length=16, choices=JobStatus.choices)
    error = models.TextField(null=True, blank=True)
    exception_class = models.CharField(max_length=255, null=True, blank=True)
    traceback = models.TextField(null=True, blank=True)
    #: The process that ran the handler ("host:pid"), when the writer of the row knew it.
    worker = models.CharField(max_length=255, null=True, blank=True)
    #: The claim's `WorkerProcess` id (`Job.claimed_by`).
    worker_process = models.UUIDField(null=True, blank=True)
    #: The run the attempt was: a worker whose run was taken away notes on this row how
    #: its handler ended.
    run_token = models.UUIDField(null=True, blank=True)
    handler_end = models.CharField(max_length=8, choices=HandlerEnd.choices, null=True, blank=True)
    handler_ended_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["job", "id"]
        # The pruner deletes old rows (a recurring job's history grows without its job
        # ever being pruned).
        indexes = [models.Index(fields=["failed_at"], name="failed_attempt_failed_at")]

    def __str__(self) -> str:
        return f"{self.job_id} attempt {self.attempt} ({self.get_ended_by_display()})"

    @property
    def handler_took(self):
        """How long after the attempt ended its handler did (see `handler_end`), or None."""
        if self.handler_ended_at is None:
            return None
        return max(self.handler_ended_at - self.failed_at, timedelta(0))


class JobTag(models.Model):
    """One tag of one job, for filtering by tag; it carries the job's queue, creation time
    and priority (fixed at enqueue) so that its indexes give a page in order."""

    # No index of its own: the unique (job, tag) index leads with the job, which is what
    # the cascade of a job's deletion reads.
    job = models.ForeignKey(
        "queues.Job", on_delete=models.CASCADE, related_name="tag_rows", db_index=False
    )
    tag = models.CharField(max_length=MAX_TAG_LENGTH)
    # The job's, copied at enqueue (none ever changes, but for a declared schedule's row,
    # whose tag rows its sync rewrites): the indexes below filter and order by them.
    queue_name = models.CharField(max_length=MAX_QUEUE_NAME_LENGTH)
    created_at = models.DateTimeField()
    priority = models.SmallIntegerField(default=JobPriority.NORMAL)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["job", "tag"], name="job_tag_unique")]
        indexes = [
            # The queue page: a queue's jobs with a tag, newest first (read backwards).
            models.Index(fields=["queue_name", "tag", "created_at", "job"], name="job_tag_queue"),
            # The admin: jobs of every queue with a tag, newest first.
            models.Index(fields=["tag", "created_at", "job"], name="job_tag_any_queue"),
            # A queue's jobs with a tag and a priority (the admin's filters): a priority is
            # 5% to 60% of the jobs, which the first index would check job by job.
            models.Index(
                fields=["queue_name", "tag", "priority", "created_at", "job"],
                name="job_tag_queue_priority",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.job_id}: {self.tag}"
