"""The tables, one module per family: jobs and their dependency edges, a job's tags and
failed attempts, batches and workflows, a queue's pause and configuration, the counters, and
the system's own records. Every model and shared name is importable from here, as the code
and the migrations import them (`queues.models.PortableIndex`). See docs/design/tables.md."""

from __future__ import annotations

from queues.models.archive import ArchivedJob
from queues.models.counters import AttemptCount, CompletionCount, HourlyCount, JobCount
from queues.models.fields import (
    MAX_QUEUE_NAME_LENGTH,
    MAX_TAG_LENGTH,
    PortableIndex,
    PortableUniqueConstraint,
    PostgresPartialIndex,
)
from queues.models.groups import Batch, TalliedGroup, Workflow
from queues.models.job_rows import FailedAttempt, JobTag
from queues.models.jobs import Job, JobDependency
from queues.models.ops import BulkOperation, ReaperRun, WorkerProcess
from queues.models.queues import QueueConfig, QueuePause

__all__ = [
    "MAX_QUEUE_NAME_LENGTH",
    "MAX_TAG_LENGTH",
    "ArchivedJob",
    "AttemptCount",
    "Batch",
    "BulkOperation",
    "CompletionCount",
    "FailedAttempt",
    "HourlyCount",
    "Job",
    "JobCount",
    "JobDependency",
    "JobTag",
    "PortableIndex",
    "PortableUniqueConstraint",
    "PostgresPartialIndex",
    "QueueConfig",
    "QueuePause",
    "ReaperRun",
    "TalliedGroup",
    "WorkerProcess",
    "Workflow",
]
