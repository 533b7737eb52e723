"""The admin of the archive (`ArchivedJob`): looked at, never edited; a row may be deleted
(nothing else deletes archived jobs). Its packed rest is not shown: the dashboard's job page
unpacks it, and restores the job."""

from __future__ import annotations

from django.contrib import admin

from queues.admin.base import ReadOnlyAdmin
from queues.models import ArchivedJob


@admin.register(ArchivedJob)
class ArchivedJobAdmin(ReadOnlyAdmin):
    list_display = ["id", "queue_name", "status", "priority", "finished_at", "archived_at"]
    list_filter = ["status", "queue_name"]
    search_fields = ["queue_name"]
    ordering = ["-archived_at"]
    fields = [
        "id", "queue_name", "status", "priority", "attempts", "failures", "created_at",
        "finished_at", "archived_at", "batch_id", "workflow_id", "unique_key", "tags",
    ]  # fmt: skip
