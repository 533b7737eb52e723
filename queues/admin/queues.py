"""The admin of queue limits (`QueueConfig`): set through the engine (`queue_config`), as
from the dashboard, with Django's add and change permissions of the table. A row is never
deleted: a blank limit is no limit (the row stays, with who removed it and when)."""

from __future__ import annotations

from django.contrib import admin
from django.core.exceptions import ValidationError

from queues.admin.base import GuardedAdmin, QueueNameForm
from queues.engine.limits import check_max_running
from queues.engine.queue import JobQueue
from queues.engine.rates import check_rate
from queues.exceptions import InvalidQueueConfig
from queues.models import QueueConfig


class QueueConfigForm(QueueNameForm):
    class Meta:
        model = QueueConfig
        fields = ["queue_name", "max_running", "rate_limit", "rate_period"]
        labels = {"rate_limit": "Rate: jobs", "rate_period": "Rate: per seconds"}
        help_texts = {
            "max_running": "The most jobs of this queue running at once, across every worker "
            "process and host. Blank: no limit.",
            "rate_limit": "The most jobs of this queue started in each window (below), across "
            "every worker process and host. Blank (both): no rate.",
            "rate_period": "The window's length in seconds; windows are aligned to the clock.",
        }

    def clean_max_running(self):
        try:
            return check_max_running(self.cleaned_data["max_running"])
        except InvalidQueueConfig as exc:
            raise ValidationError(str(exc)) from exc

    def clean(self):
        cleaned = super().clean()
        jobs, seconds = cleaned.get("rate_limit"), cleaned.get("rate_period")
        if "rate_limit" in cleaned and "rate_period" in cleaned:
            try:
                check_rate(None if jobs is None and seconds is None else (jobs, seconds))
            except InvalidQueueConfig as exc:
                raise ValidationError(str(exc)) from exc
        return cleaned


@admin.register(QueueConfig)
class QueueConfigAdmin(GuardedAdmin):
    list_display = [
        "queue_name",
        "max_running",
        "rate_limit",
        "rate_period",
        "updated_by",
        "updated_at",
    ]
    search_fields = ["queue_name", "updated_by"]
    form = QueueConfigForm

    def save_model(self, request, obj, form, change) -> None:
        rate = None if obj.rate_limit is None else (obj.rate_limit, obj.rate_period)
        JobQueue().queue_config(
            obj.queue_name,
            max_running=obj.max_running,
            rate=rate,
            updated_by=request.user.get_username(),
        )

    def get_readonly_fields(self, request, obj=None):
        return ["queue_name"] if obj else []

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
