"""The admin of batches, workflows and the workflows' dependency edges: read-only, as the
engine writes them. A batch or a workflow is deleted with its jobs through the engine; an
edge is never deleted alone."""

from __future__ import annotations

from django.contrib import admin

from queues.admin.base import EngineDeletes, ReadOnlyAdmin
from queues.engine import deletion
from queues.engine.queue import JobQueue
from queues.models import Batch, JobDependency, Workflow

#: The fields of a group's page before and after its own (`TalliedGroup` declares the
#: shared ones first; the page keeps the table's column order).
_LEADING = ["name", "status"]
_TALLIES = ["total_jobs", "completed_jobs", "failed_jobs", "created_at", "completed_at"]
#: The callbacks declared and the ids of those enqueued (`queues.callbacks`).
_CALLBACKS = ["callbacks", "callback_jobs"]


class GroupAdmin(EngineDeletes, ReadOnlyAdmin):
    """A batch or a workflow: deleted with its jobs, each as `delete_job` deletes one, and
    refused while any is Running (`queues.engine.deletion`)."""

    def delete_refusal(self, group) -> str | None:
        return deletion.refusal(group)

    def engine_delete(self, queue: JobQueue, group) -> None:
        deletion.delete_group(queue, group)


@admin.register(Batch)
class BatchAdmin(GroupAdmin):
    list_display = [
        "name",
        "status",
        "failure_mode",
        "total_jobs",
        "completed_jobs",
        "failed_jobs",
        "created_at",
    ]
    list_filter = ["status", "failure_mode"]
    search_fields = ["=id", "name", "error_summary"]
    fields = [*_LEADING, "failure_mode", *_TALLIES, "error_summary", "metadata", *_CALLBACKS]


@admin.register(Workflow)
class WorkflowAdmin(GroupAdmin):
    list_display = [
        "name",
        "status",
        "failure_policy",
        "total_jobs",
        "completed_jobs",
        "failed_jobs",
        "created_at",
    ]
    list_filter = ["status", "failure_policy"]
    search_fields = ["=id", "name"]
    fields = [*_LEADING, "failure_policy", *_TALLIES, "failed_at", "metadata", *_CALLBACKS]


@admin.register(JobDependency)
class JobDependencyAdmin(ReadOnlyAdmin):
    list_display = ["job", "parent"]
    search_fields = ["=job__id", "=parent__id"]
    raw_id_fields = ["job", "parent"]

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # an edge deleted alone leaves its job waiting for ever; delete the job
