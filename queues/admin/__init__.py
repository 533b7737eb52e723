"""The Django admin for every table, one module per family of tables: jobs and their error
history, batches and workflows, a queue's pause and limits, and the engine's own records.
Importing them registers their admins (Django's autodiscovery imports this package). Actions
call the same `JobQueue` methods as the dashboard; a refusal is reported per row, never a 500."""

from __future__ import annotations

from queues.admin.archive import ArchivedJobAdmin
from queues.admin.groups import BatchAdmin, GroupAdmin, JobDependencyAdmin, WorkflowAdmin
from queues.admin.jobs import DeclaredFilter, FailedAttemptAdmin, JobAdmin
from queues.admin.queues import QueueConfigAdmin, QueueConfigForm, QueuePauseAdmin
from queues.admin.records import (
    BulkOperationAdmin,
    CompletionCountAdmin,
    JobCountAdmin,
    ReaperRunAdmin,
    WorkerProcessAdmin,
)

__all__ = [
    "ArchivedJobAdmin",
    "BatchAdmin",
    "BulkOperationAdmin",
    "CompletionCountAdmin",
    "DeclaredFilter",
    "FailedAttemptAdmin",
    "GroupAdmin",
    "JobAdmin",
    "JobCountAdmin",
    "JobDependencyAdmin",
    "QueueConfigAdmin",
    "QueueConfigForm",
    "QueuePauseAdmin",
    "ReaperRunAdmin",
    "WorkerProcessAdmin",
    "WorkflowAdmin",
]
