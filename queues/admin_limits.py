"""The admin of queue limits (`QueueConfig`): set through the engine (`queue_config`), as
from the dashboard, with Django's add and change permissions of the table. A row is never
deleted: a blank limit is no limit (the row stays, with who removed it and when)."""

from __future__ import annotations

from django.contrib import admin
from django.core.exceptions import ValidationError

from .admin_base import GuardedAdmin, QueueNameForm
from .exceptions import InvalidQueueConfig
from .limits import check_max_running
from .models import QueueConfig
from .queue import JobQueue


class QueueConfigForm(QueueNameForm):
    class Meta:
        model = QueueConfig
        fields = ["queue_name", "max_running"]
        help_texts = {
            "max_running": "The most jobs of this queue running at once, across every worker "
            "process and host. Blank: no limit.",
        }

    def clean_max_running(self):
        try:
            return check_max_running(self.cleaned_data["max_running"])
        except InvalidQueueConfig as exc:
            raise ValidationError(str(exc)) from exc


@admin.register(QueueConfig)
class QueueConfigAdmin(GuardedAdmin):
    list_display = ["queue_name", "max_running", "updated_by", "updated_at"]
    search_fields = ["queue_name", "updated_by"]
    form = QueueConfigForm

    def save_model(self, request, obj, form, change) -> None:
        JobQueue().queue_config(
            obj.queue_name, max_running=obj.max_running, updated_by=request.user.get_username()
        )

    def get_readonly_fields(self, request, obj=None):
        return ["queue_name"] if obj else []

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
