"""The public Python API of the queue engine (see spec/API.md). Import from here only."""

from __future__ import annotations

from .clock import MockClock, SystemClock
from .cron import CronSchedule
from .enums import (
    AttemptEnd,
    BatchStatus,
    DependencyStatus,
    FailurePolicy,
    HandlerEnd,
    JobPriority,
    JobStatus,
    PartialFailureMode,
    WorkflowStatus,
)
from .exceptions import (
    EngineError,
    InvalidBatch,
    InvalidCronSchedule,
    InvalidJob,
    InvalidJobTransition,
    InvalidPayload,
    InvalidPriority,
    InvalidQueueConfig,
    InvalidQueueName,
    InvalidSchedule,
    InvalidTags,
    InvalidWorkflow,
    JobNotFound,
    QueueError,
    UnsupportedDatabase,
)
from .groups import BatchResult, JobBatch, JobGroup
from .memory import TestQueue
from .models import FailedAttempt, Job, QueueConfig
from .options import DequeueOptions, PriorityWeights
from .outcomes import JobOutcome, RecordedOutcome, StaleJobRecovery
from .queue import JobQueue
from .retry import RetryStrategy
from .runs import CANCELLED, LOST, RELEASED, STARTED
from .schedule_sync import ScheduleSync
from .schedules import Schedule
from .unique import EnqueueResult, unique_key_for

__all__ = [
    "CANCELLED",
    "LOST",
    "RELEASED",
    "STARTED",
    "AttemptEnd",
    "BatchResult",
    "BatchStatus",
    "CronSchedule",
    "DependencyStatus",
    "DequeueOptions",
    "EnqueueResult",
    "EngineError",
    "FailedAttempt",
    "FailurePolicy",
    "HandlerEnd",
    "InvalidBatch",
    "InvalidCronSchedule",
    "InvalidJob",
    "InvalidJobTransition",
    "InvalidPayload",
    "InvalidPriority",
    "InvalidQueueConfig",
    "InvalidQueueName",
    "InvalidSchedule",
    "InvalidTags",
    "InvalidWorkflow",
    "Job",
    "JobBatch",
    "JobGroup",
    "JobNotFound",
    "JobOutcome",
    "JobPriority",
    "JobQueue",
    "JobStatus",
    "MockClock",
    "PartialFailureMode",
    "PriorityWeights",
    "QueueConfig",
    "QueueError",
    "RecordedOutcome",
    "RetryStrategy",
    "Schedule",
    "ScheduleSync",
    "StaleJobRecovery",
    "SystemClock",
    "TestQueue",
    "UnsupportedDatabase",
    "WorkflowStatus",
    "unique_key_for",
]
