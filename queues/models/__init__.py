"""The tables: jobs, batches, workflows, queue pauses and limits, reaper runs and worker
processes.

State machine of a job (the claim, the outcomes and the operator's actions):

    Pending --claim--> Running --completed--> Completed   (recurring: back to Pending)
                          |--failed, attempts left--> Pending (scheduled after a backoff)
                          |--failed, none left-----> Dead
                          |--timed out, none left--> TimedOut
                          |--released / lease expired--> Pending
    Pending --a dependency or fail-fast batch failed--> Failed
    Failed / Dead / TimedOut --retry_job--> Pending

A Running row always carries a lease and the token of its run (a check constraint); every
write of a run matches that token, so a stale run cannot change a row it no longer owns.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

from django.db import models
from django.db.models import Q
from django.utils import timezone

from queues.engine.history import FailedAttempt
from queues.enums import (
    PRIORITY_CHOICES,
    BatchStatus,
    DependencyStatus,
    FailurePolicy,
    JobPriority,
    JobStatus,
    PartialFailureMode,
    WorkflowStatus,
)
from queues.exceptions import InvalidJob
from queues.tags import JobTag

# The error history's table and the tags' table, each defined with its rules.
__all__ = ["FailedAttempt", "JobTag"]

MAX_QUEUE_NAME_LENGTH = 255


class PortableIndex(models.Index):
    """A partial index where the database has them (PostgreSQL, SQLite); elsewhere (MySQL,
    MariaDB) the same columns without the condition, instead of no index at all."""

    def _get_condition_sql(self, model, schema_editor):
        if not schema_editor.connection.features.supports_partial_indexes:
            return None
        return super()._get_condition_sql(model, schema_editor)


class PortableUniqueConstraint(models.UniqueConstraint):
    """A unique index over a nullable column, partial (`IS NOT NULL`) where the database has
    partial indexes (PostgreSQL, SQLite): rows without a value then cost it nothing, not even
    on the writes of their runs. MySQL and MariaDB get the same unique index without the
    condition, which means the same there: a unique index takes any number of NULLs."""

    def _get_condition_sql(self, model, schema_editor):
        if not schema_editor.connection.features.supports_partial_indexes:
            return None
        return super()._get_condition_sql(model, schema_editor)

    def check(self, model, connection):
        # Django warns that MySQL drops the condition (models.W036): here that is the point.
        return [e for e in super().check(model, connection) if e.id != "models.W036"]


def _status_in(*statuses: JobStatus) -> Q:
    return Q(status__in=[s.value for s in statuses])


class Batch(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=255)
    status = models.CharField(
        max_length=20, choices=BatchStatus.choices, default=BatchStatus.PENDING
    )
    failure_mode = models.CharField(
        max_length=20,
        choices=PartialFailureMode.choices,
        default=PartialFailureMode.CONTINUE_ON_ERROR,
    )
    total_jobs = models.PositiveIntegerField(default=0)
    completed_jobs = models.PositiveIntegerField(default=0)
    failed_jobs = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    error_summary = models.TextField(null=True, blank=True)
    metadata = models.JSONField(default=dict, blank=True)

    class Meta:
        verbose_name_plural = "batches"
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(completed_jobs__lte=models.F("total_jobs") - models.F("failed_jobs")),
                name="batch_tallies_within_total",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.status})"

    @property
    def pending_jobs(self) -> int:
        return self.total_jobs - self.completed_jobs - self.failed_jobs


class Workflow(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=255)
    status = models.CharField(
        max_length=20, choices=WorkflowStatus.choices, default=WorkflowStatus.RUNNING
    )
    failure_policy = models.CharField(
        max_length=24, choices=FailurePolicy.choices, default=FailurePolicy.FAIL_FAST
    )
    total_jobs = models.PositiveIntegerField(default=0)
    completed_jobs = models.PositiveIntegerField(default=0)
    failed_jobs = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    failed_at = models.DateTimeField(null=True, blank=True)
    metadata = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(completed_jobs__lte=models.F("total_jobs") - models.F("failed_jobs")),
                name="workflow_tallies_within_total",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.status})"

    @property
    def pending_jobs(self) -> int:
        return self.total_jobs - self.completed_jobs - self.failed_jobs


class Job(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    queue_name = models.CharField(max_length=MAX_QUEUE_NAME_LENGTH)
    payload = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=16, choices=JobStatus.choices, default=JobStatus.PENDING)
    priority = models.SmallIntegerField(choices=PRIORITY_CHOICES, default=JobPriority.NORMAL)
    attempts = models.PositiveIntegerField(default=0)
    max_attempts = models.PositiveIntegerField(default=3)

    created_at = models.DateTimeField(default=timezone.now)
    scheduled_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    failed_at = models.DateTimeField(null=True, blank=True)
    timed_out_at = models.DateTimeField(null=True, blank=True)
    error_message = models.TextField(null=True, blank=True)
    timeout = models.DurationField(null=True, blank=True)
    retry_strategy = models.JSONField(null=True, blank=True)
    result = models.JSONField(null=True, blank=True)

    # Recurring jobs: one row, rescheduled in place. `recurring` is False for a disabled one.
    cron_schedule = models.CharField(max_length=100, null=True, blank=True)
    timezone = models.CharField(max_length=64, default="UTC")
    next_run_at = models.DateTimeField(null=True, blank=True)
    recurring = models.BooleanField(default=False)

    batch = models.ForeignKey(
        Batch, null=True, blank=True, on_delete=models.CASCADE, related_name="jobs"
    )
    workflow = models.ForeignKey(
        Workflow, null=True, blank=True, on_delete=models.CASCADE, related_name="jobs"
    )
    # The ids (as strings) of the jobs this one waits for; the edges are also in JobDependency.
    depends_on = models.JSONField(default=list, blank=True)
    dependency_status = models.CharField(
        max_length=10, choices=DependencyStatus.choices, default=DependencyStatus.NONE
    )

    # The lease of the current run.
    run_token = models.UUIDField(null=True, blank=True, editable=False)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    last_heartbeat_at = models.DateTimeField(null=True, blank=True)
    # The worker process (its `WorkerProcess` id) whose claim the current or last run was,
    # so that a supervisor can hand back a dead child's jobs at once, not after their lease.
    claimed_by = models.UUIDField(null=True, blank=True, editable=False)

    # Unique jobs (queues/engine/unique.py): the key, the statuses and period for which the job
    # holds it ({"statuses": [...], "period": seconds}), and its slot, a digest of queue
    # and key under a unique index. The slot stays on the row after the job stops holding
    # the key, until the next enqueue of the key finds it so and clears it: no write of a
    # run touches these columns.
    unique_key = models.CharField(max_length=255, null=True, blank=True)
    unique_scope = models.JSONField(null=True, blank=True, editable=False)
    unique_slot = models.CharField(max_length=64, null=True, blank=True, editable=False)
    # A schedule declared in settings (HAMMERWEB["SCHEDULES"], queues/schedules.py): its
    # name, and when a sync found it gone from the settings (and disabled it).
    schedule_name = models.CharField(max_length=255, null=True, blank=True, editable=False)
    schedule_removed_at = models.DateTimeField(null=True, blank=True, editable=False)
    # Tags and metadata (queues/tags.py), given at enqueue and never changed: on the row so
    # that every read returns them; the tags are also rows of `JobTag`, which filters read.
    tags = models.JSONField(default=list, blank=True, editable=False)
    meta = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-priority", "scheduled_at", "id"]
        indexes = [
            # The claim: claimable rows of a queue, in claim order.
            PortableIndex(
                fields=["queue_name", "status", "-priority", "scheduled_at", "id"],
                condition=Q(status=JobStatus.PENDING),
                name="job_claim_order",
            ),
            # The reaper: running rows by lease expiry.
            PortableIndex(
                fields=["status", "lease_expires_at"],
                condition=Q(status=JobStatus.RUNNING),
                name="job_lease_expiry",
            ),
            # Counts per queue and status, listings, pruning of finished jobs; and the history
            # page's sample of each queue's newest completions (queues.reads.trends), read from the
            # index alone (its times are in it): through the rows, six queues' samples missed
            # MariaDB's buffer pool (350 to 430 ms at a million jobs).
            models.Index(
                fields=[
                    "queue_name",
                    "status",
                    "created_at",
                    "scheduled_at",
                    "started_at",
                    "completed_at",
                ],
                name="job_queue_status",
            ),  # fmt: skip
            models.Index(fields=["status", "completed_at"], name="job_status_completed"),
            # The admin's job list, newest first (its default order, with Django's -pk): a
            # page of it without a filter sorted all the jobs (3.1 s on a million); and the
            # all-queues jobs page, newest first by created time (queues/reads/search.py).
            models.Index(fields=["created_at", "id"], name="job_created"),
            PortableIndex(
                fields=["recurring", "next_run_at"],
                condition=Q(cron_schedule__isnull=False),
                name="job_recurring",
            ),
        ]
        constraints = [
            # Unique jobs and declared schedules: one holder of a key (or name) at a time.
            PortableUniqueConstraint(
                fields=["unique_slot"],
                condition=Q(unique_slot__isnull=False),
                name="job_unique_slot",
            ),
            models.CheckConstraint(
                condition=Q(priority__gte=0, priority__lte=4), name="job_priority_range"
            ),
            models.CheckConstraint(condition=Q(max_attempts__gte=1), name="job_max_attempts_min"),
            models.CheckConstraint(
                condition=Q(status__in=JobStatus.values), name="job_status_known"
            ),
            models.CheckConstraint(
                condition=~Q(status=JobStatus.RUNNING)
                | Q(
                    run_token__isnull=False,
                    lease_expires_at__isnull=False,
                    started_at__isnull=False,
                ),
                name="job_running_has_lease",
            ),
            models.CheckConstraint(
                condition=Q(status=JobStatus.RUNNING) | Q(run_token__isnull=True),
                name="job_token_only_while_running",
            ),
            models.CheckConstraint(
                condition=~Q(status=JobStatus.COMPLETED) | Q(completed_at__isnull=False),
                name="job_completed_has_time",
            ),
            models.CheckConstraint(
                condition=Q(cron_schedule__isnull=False) | Q(recurring=False),
                name="job_recurring_has_cron",
            ),
        ]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # A new job is due when it is built: one instant for both, so that the delay
        # (scheduled_at - created_at) is exactly zero unless the caller set one.
        if not args and "scheduled_at" not in kwargs:
            self.scheduled_at = self.created_at

    def __str__(self) -> str:
        return f"{self.queue_name}:{self.id} ({self.status})"

    @classmethod
    def check(cls, **kwargs):
        # Django warns that MySQL/MariaDB drop a partial index's condition (models.W037):
        # PortableIndex drops it on purpose and keeps the columns. Silenced for this model
        # only, so that a project need not silence it for its own.
        return [error for error in super().check(**kwargs) if error.id != "models.W037"]

    @property
    def is_recurring(self) -> bool:
        return bool(self.cron_schedule)

    # The scope of a unique key, as keywords of `Job(...)` (checked at enqueue, see
    # queues/engine/unique.py): the statuses in which the job holds its key, and a period after
    # its creation during which it holds the key whatever its status.
    @property
    def unique_statuses(self) -> list[str] | None:
        return (self.unique_scope or {}).get("statuses")

    @unique_statuses.setter
    def unique_statuses(self, statuses) -> None:
        self.unique_scope = {**(self.unique_scope or {}), "statuses": statuses}

    @property
    def unique_period(self) -> timedelta | None:
        seconds = (self.unique_scope or {}).get("period")
        return None if seconds is None else timedelta(seconds=seconds)

    @unique_period.setter
    def unique_period(self, period: timedelta | None) -> None:
        if period is not None and not isinstance(period, timedelta):
            # Refused here: the scope stores seconds, and a number is not a duration.
            raise InvalidJob("unique_period must be a positive timedelta")
        seconds = None if period is None else period.total_seconds()
        self.unique_scope = {**(self.unique_scope or {}), "period": seconds}

    def depends_on_job(self, other: Job) -> Job:
        """Make this job wait for `other`; returns self for chaining."""
        ids = [str(i) for i in self.depends_on]
        if str(other.id) not in ids:
            ids.append(str(other.id))
        self.depends_on = ids
        return self

    #: Set (True) by the worker running this job once its run is no longer the worker's
    #: (cancelled, retried, released, reaped); see `cancel_requested`.
    _cancel_requested = False

    def cancel_requested(self) -> bool:
        """In a handler a worker runs: whether this run was cancelled (or otherwise taken
        from its worker) while it runs. The handler should stop soon (return or raise):
        nothing it returns is recorded. Always False outside a worker's run."""
        return self._cancel_requested

    @property
    def duration(self):
        """How long the run took (finished minus actual start), or None."""
        end = self.completed_at or self.failed_at or self.timed_out_at
        if self.started_at and end and end >= self.started_at:
            return end - self.started_at
        return None


class JobDependency(models.Model):
    """An edge of the dependency graph: `job` waits for `parent`. Indexed both ways so
    that a finished parent finds its dependents without scanning JSON."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="dependency_edges")
    parent = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="dependent_edges")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["job", "parent"], name="job_dependency_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.job_id} waits for {self.parent_id}"


class JobCount(models.Model):
    """How many jobs a queue has in a status, kept exact by database triggers (see
    `install_job_counts` in queues/sql). A (queue, status) is split over shards so that
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
    the transaction of each completion (see `install_completion_counts` in queues/sql and
    `queues.store.counters.completions`). Sharded like `JobCount`; a minute's count is the sum of
    its shards. Minutes older than a day are pruned."""

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
    status, kept by database triggers on the error history's inserts (see `install_attempt_counts`
    in queues/sql and `queues.store.counters.attempt_counts`). The status, not a "failure" or
    "retry" verdict: which statuses are which is `queues.store.counters.rollup`'s rule, kept there
    only. Sharded like `CompletionCount`; pruned with it."""

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
