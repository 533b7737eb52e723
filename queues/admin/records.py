"""The admin of the engine's own records, read-only: the reaper's passes, the live worker
processes, the operators' bulk operations (made by the dashboard's "all matching", changed
only by their runner; a finished one may be deleted) and the trigger-kept counters."""

from __future__ import annotations

from django.contrib import admin

from queues.admin.base import GuardedAdmin, ReadOnlyAdmin
from queues.models import BulkOperation, CompletionCount, JobCount, ReaperRun, WorkerProcess


@admin.register(ReaperRun)
class ReaperRunAdmin(ReadOnlyAdmin):
    list_display = ["ran_at", "ran_by", "queue_name", "requeued_count", "dead_count"]
    list_filter = ["queue_name"]
    search_fields = ["ran_by", "queue_name"]


@admin.register(WorkerProcess)
class WorkerProcessAdmin(ReadOnlyAdmin):
    list_display = [
        "hostname",
        "pid",
        "queues",
        "batch_size",
        "concurrency",
        "jobs_held",
        "jobs_running",
        "jobs_processed",
        "last_heartbeat_at",
    ]
    search_fields = ["hostname"]


@admin.register(JobCount)
class JobCountAdmin(ReadOnlyAdmin):
    """The trigger-kept counts (one row per queue, status and shard)."""

    list_display = ["queue_name", "status", "shard", "n"]
    list_filter = ["status", "queue_name"]
    search_fields = ["queue_name"]

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(CompletionCount)
class CompletionCountAdmin(ReadOnlyAdmin):
    """The trigger-kept completions (one row per queue, minute and shard); the pruner
    deletes the old minutes."""

    list_display = ["queue_name", "minute", "shard", "n"]
    ordering = ["-minute", "queue_name", "shard"]
    list_filter = ["queue_name"]
    search_fields = ["queue_name"]

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(BulkOperation)
class BulkOperationAdmin(GuardedAdmin):
    list_display = ["id", "action", "status", "created_by", "total", "done", "skipped",
                    "created_at", "finished_at"]  # fmt: skip
    list_filter = ["status", "action"]
    search_fields = ["created_by", "description"]
    readonly_fields = [f.name for f in BulkOperation._meta.fields]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return obj is None or obj.finished
