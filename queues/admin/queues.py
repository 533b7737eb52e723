"""The admin of a queue's own rows, both set through the engine as from the dashboard: its
pause (`QueuePause`: adding one pauses the queue, deleting it resumes the queue) and its
limits (`QueueConfig`, never deleted: a blank limit is no limit, and the row keeps who
removed it and when)."""

from __future__ import annotations

from django.contrib import admin
from django.core.exceptions import ValidationError

from queues.admin.base import BOTH, GuardedAdmin, QueueNameForm, each
from queues.engine.limits import check_max_running
from queues.engine.queue import JobQueue
from queues.engine.rates import check_rate
from queues.exceptions import InvalidQueueConfig
from queues.models import QueueConfig, QueuePause


@admin.register(QueuePause)
class QueuePauseAdmin(GuardedAdmin):
    list_display = ["queue_name", "paused_by", "paused_at", "reason"]
    search_fields = ["queue_name", "paused_by", "reason"]
    fields = ["queue_name", "reason"]
    form = QueueNameForm
    actions = ["resume"]

    def save_model(self, request, obj, form, change) -> None:
        # Pausing goes through the engine, as from the dashboard.
        JobQueue().pause_queue(
            obj.queue_name, paused_by=request.user.get_username(), reason=obj.reason or None
        )

    def delete_model(self, request, obj) -> None:
        JobQueue().resume_queue(obj.queue_name, resumed_by=request.user.get_username())

    def delete_queryset(self, request, queryset) -> None:
        self.resume(request, queryset)

    def get_readonly_fields(self, request, obj=None):
        return ["queue_name"] if obj else []

    @admin.action(description="Resume the selected queues", permissions=["change"], location=BOTH)
    def resume(self, request, queryset):
        names, by = queryset.values_list("queue_name", flat=True), request.user.get_username()
        each(self, request, names, "Resume", JobQueue().resume_queue, resumed_by=by)


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
