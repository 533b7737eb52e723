"""The admin of bulk operations (`BulkOperation`): what was asked, by whom, and how far it
got. Read-only: an operation is made by the dashboard's "all matching" and changed only by
its runner (a stop is the dashboard's); a finished one may be deleted."""

from __future__ import annotations

from django.contrib import admin

from queues.admin.base import GuardedAdmin
from queues.models import BulkOperation


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
