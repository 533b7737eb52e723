"""The public Python API of the queue engine (see spec/API.md). Import from here only."""

from __future__ import annotations

from queues.clock import MockClock, SystemClock
from queues.cron import CronSchedule
from queues.engine.explain import Explanation, Reason
from queues.engine.outcomes import JobOutcome, RecordedOutcome, StaleJobRecovery
from queues.engine.queue import JobQueue
from queues.engine.runs import CANCELLED, LOST, RELEASED, STARTED
from queues.engine.schedule_sync import ScheduleSync
from queues.engine.unique import EnqueueResult, unique_key_for
from queues.enums import (
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
from queues.exceptions import (
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
from queues.groups import BatchResult, JobBatch, JobGroup
from queues.models import FailedAttempt, Job, QueueConfig
from queues.options import DequeueOptions, PriorityWeights
from queues.retry import RetryStrategy
from queues.schedules import Schedule
from queues.testing import TestQueue

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
    "Explanation",
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
    "Reason",
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
