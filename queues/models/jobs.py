"""The jobs' table (`Job`) and the edges of their dependency graph (`JobDependency`). A job
moves Pending, Running, then Completed, Failed, Dead or TimedOut; a Running row always
carries a lease and the token of its run (a check constraint), which every write of the run
matches. See docs/design/tables.md for the states, the indexes and the constraints."""

from __future__ import annotations

import uuid
from datetime import timedelta

from django.db import models
from django.db.models import Q
from django.db.models.base import ModelState
from django.db.models.signals import post_init, pre_init
from django.utils import timezone

from queues.enums import PRIORITY_CHOICES, DependencyStatus, JobPriority, JobStatus
from queues.exceptions import InvalidJob
from queues.models.fields import (
    MAX_QUEUE_NAME_LENGTH,
    PortableIndex,
    PortableUniqueConstraint,
    PostgresPartialIndex,
)
from queues.models.groups import Batch, Workflow


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

    # Indexed by the partial job_batch and job_workflow (Meta), not by Django's own index.
    batch = models.ForeignKey(
        Batch, null=True, blank=True, on_delete=models.CASCADE, related_name="jobs", db_index=False
    )
    workflow = models.ForeignKey(
        Workflow,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="jobs",
        db_index=False,
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
    # The order within a priority level, higher first: a django.tasks task's own priority
    # (-100..100, whose level `priority` is derived from it), 0 for every other job. Django
    # promises that any larger priority runs sooner; the five levels alone would tie them.
    task_priority = models.SmallIntegerField(default=0, editable=False)
    # The W3C trace context (traceparent, tracestate) of the span that enqueued the job, when
    # OpenTelemetry tracing is on (queues/tracing.py): a run's span links to it. Last of the
    # columns, as the catalogue's insert_jobs lists them.
    trace_context = models.JSONField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["-priority", "-task_priority", "scheduled_at", "id"]
        indexes = [
            # The claim: claimable rows of a queue, in claim order.
            PortableIndex(
                fields=[
                    "queue_name",
                    "status",
                    "-priority",
                    "-task_priority",
                    "scheduled_at",
                    "id",
                ],
                condition=Q(status=JobStatus.PENDING),
                name="job_claim_order",
            ),
            # When a queue's jobs became due, oldest first, per dependency state: the oldest
            # due job (health, metrics) and an idle worker's next look (next_due).
            PortableIndex(
                fields=["queue_name", "status", "dependency_status", "scheduled_at"],
                condition=Q(status=JobStatus.PENDING),
                name="job_due",
            ),
            # The reaper: running rows by lease expiry.
            PortableIndex(
                fields=["status", "lease_expires_at"],
                condition=Q(status=JobStatus.RUNNING),
                name="job_lease_expiry",
            ),
            # Counts, listings, pruning; its times serve the history page's sample from the
            # index alone (queues.reads.trends).
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
            # The pruner: finished jobs by their end.
            PostgresPartialIndex(
                fields=["status", "completed_at"],
                condition=~Q(status__in=[JobStatus.PENDING, JobStatus.RUNNING]),
                name="job_status_completed",
            ),
            # Newest first: the admin's job list and the all-queues jobs page.
            models.Index(fields=["created_at", "id"], name="job_created"),
            # A group's jobs (its page, the cascade of its deletion): most jobs have none,
            # and on PostgreSQL a full index takes an entry for every write of every job.
            PortableIndex(fields=["batch"], condition=Q(batch__isnull=False), name="job_batch"),
            PortableIndex(
                fields=["workflow"], condition=Q(workflow__isnull=False), name="job_workflow"
            ),
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
            models.CheckConstraint(
                condition=Q(task_priority__gte=-100, task_priority__lte=100),
                name="job_task_priority_range",
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
        if args or not _built_from_keywords(self, kwargs):
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


def _built_from_keywords(job: Job, kwargs: dict) -> bool:
    """`Model.__init__` for a new job built from its fields' names (`Job(queue_name=...)`),
    what an enqueue's caller does for every job: each field its keyword's value or its
    default, as Django sets them. Django's own loop raises and catches a KeyError for every
    field not given (about two thirds of a job's construction). False, and nothing done,
    where Django's path is needed: a receiver of `pre_init` or `post_init` for jobs, or a
    keyword that is not a column's attribute (a related object, a property, a mistake for
    Django to report)."""
    constants, made = _KEYWORD_DEFAULTS or _keyword_defaults()
    if not constants.keys() >= kwargs.keys():
        return False
    if pre_init.has_listeners(Job) or post_init.has_listeners(Job):
        return False
    job._state = ModelState()
    values = job.__dict__
    values.update(constants)  # every field, in the model's order
    for attname, default in made:
        if attname not in kwargs:
            values[attname] = default()
    values.update(kwargs)
    return True


def _keyword_defaults() -> tuple[dict, tuple]:
    """Made once, at the first job built (and set whole, for a thread building one at the
    same time): each field's default as Django's path gives it (`Field.get_default`'s
    callable, Django's own cache of it). Where that callable returns the same immutable
    value each time (None, a literal default, `str`'s ""), the value itself, set with one
    dict update; the others (an id, a time, a new list) are called for each job."""
    from django.db.models.fields import return_None

    global _KEYWORD_DEFAULTS
    constants, made = {}, []
    for field in Job._meta.concrete_fields:
        default = getattr(field, "_get_default", None) or field.get_default
        if default is return_None:
            constants[field.attname] = None
        elif default is str:
            constants[field.attname] = ""
        elif field.has_default() and not callable(field.default):
            constants[field.attname] = field.default  # what Django's callable returns
        else:
            constants[field.attname] = None
            made.append((field.attname, default))
    _KEYWORD_DEFAULTS = (constants, tuple(made))
    return _KEYWORD_DEFAULTS


#: Every field's attribute name -> its constant default (None for the others), and the
#: fields whose default is made anew for each job, with the callable that makes it.
_KEYWORD_DEFAULTS: tuple[dict, tuple] | None = None
