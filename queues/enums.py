"""The value types stored in the tables: statuses, priorities and modes, stored as Hammerwork
spells them, and the sets of statuses several rooms ask about (terminal, failure).
See docs/design/vocabulary.md."""

from __future__ import annotations

import enum

from django.db import models


class JobStatus(models.TextChoices):
    """A job's state, stored as these exact strings (Hammerwork's spelling)."""

    PENDING = "Pending"
    RUNNING = "Running"
    COMPLETED = "Completed"
    FAILED = "Failed"
    DEAD = "Dead"
    TIMED_OUT = "TimedOut"
    RETRYING = "Retrying"
    ARCHIVED = "Archived"

    @property
    def is_terminal(self) -> bool:
        return self in TERMINAL_STATUSES

    @property
    def is_failure(self) -> bool:
        return self in FAILURE_STATUSES


TERMINAL_STATUSES = frozenset(
    {JobStatus.COMPLETED, JobStatus.FAILED, JobStatus.DEAD, JobStatus.TIMED_OUT, JobStatus.ARCHIVED}
)
FAILURE_STATUSES = frozenset({JobStatus.FAILED, JobStatus.DEAD, JobStatus.TIMED_OUT})


class JobPriority(enum.IntEnum):
    BACKGROUND = 0
    LOW = 1
    NORMAL = 2
    HIGH = 3
    CRITICAL = 4

    @property
    def label(self) -> str:
        return self.name.capitalize()


PRIORITY_CHOICES = [(p.value, p.label) for p in JobPriority]


class DependencyStatus(models.TextChoices):
    NONE = "none"
    WAITING = "waiting"
    SATISFIED = "satisfied"
    FAILED = "failed"


class PartialFailureMode(models.TextChoices):
    CONTINUE_ON_ERROR = "ContinueOnError"
    FAIL_FAST = "FailFast"
    COLLECT_ERRORS = "CollectErrors"


class BatchStatus(models.TextChoices):
    PENDING = "Pending"
    PROCESSING = "Processing"
    COMPLETED = "Completed"
    PARTIALLY_FAILED = "PartiallyFailed"
    FAILED = "Failed"


class WorkflowStatus(models.TextChoices):
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


class FailurePolicy(models.TextChoices):
    """What a terminal failure of one workflow job does to the rest of the workflow."""

    FAIL_FAST = "fail_fast"
    CONTINUE_ON_FAILURE = "continue_on_failure"
    MANUAL = "manual"


class AttemptEnd(models.TextChoices):
    """What ended a failed attempt (a row of the error history, `FailedAttempt`)."""

    ERROR = "error", "failed"  # the handler raised, or returned a failure
    TIMEOUT = "timeout", "timed out"  # it ran past the job's timeout
    LEASE_EXPIRED = "lease_expired", "lease expired"  # the reaper took the run back
    PROCESS_DIED = "process_died", "process died"  # its worker process died (the lifeline)
    CANCELLED = "cancelled", "cancelled"  # an operator, or its failed fail-fast batch
    MARKED_DEAD = "marked_dead", "marked dead"  # an operator, while it ran
    RETRIED = "retried", "retried"  # an operator retried it while it ran


class HandlerEnd(models.TextChoices):
    """How the handler of a run that was taken from its worker (cancelled, retried,
    reaped) ended, as its worker saw it afterwards."""

    STOPPED = "stopped", "stopped"  # it returned or raised (an async one: its task was cancelled)
    CUT_OFF = "cut_off", "cut off"  # it ran on until the job's timeout
