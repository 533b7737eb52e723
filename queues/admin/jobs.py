"""The admin of jobs and their error history. A job is changed only by its actions (retry,
cancel, mark dead, release, pause or resume its queue), which call the same `JobQueue`
methods as the dashboard; its page offers those its status allows. The failed attempts are
read-only and go with their job."""

from __future__ import annotations

from django.contrib import admin
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.html import format_html

from queues.admin.base import BOTH, EngineDeletes, ReadOnlyAdmin, each, report_acted
from queues.admin.tags import CappedPaginator, QueueFilter, TagFilter, TaggedChangeList
from queues.engine import transitions
from queues.engine.queue import JobQueue
from queues.exceptions import QueueError
from queues.models import FailedAttempt, Job
from queues.reads.timeline import Timeline
from queues.templatetags.dashboard import pretty_json


def _ids(jobs):
    return jobs.values_list("id", flat=True)


def _queue_names(jobs) -> list[str]:
    return sorted(set(jobs.values_list("queue_name", flat=True)))


def _shortened(text: str | None, width: int) -> str:
    """An error as a list's column shows it: at most `width` characters, cut with "…"."""
    text = text or ""
    return text if len(text) <= width else text[: width - 1] + "…"


class DeclaredFilter(admin.SimpleListFilter):
    """Recurring jobs declared in code (`HAMMERWEB["SCHEDULES"]`) or enqueued."""

    title = "schedule"
    parameter_name = "declared"

    def lookups(self, request, model_admin):
        return [("yes", "declared in code"), ("removed", "removed from the settings")]

    def queryset(self, request, queryset):
        if self.value() == "yes":
            return queryset.filter(schedule_name__isnull=False)
        if self.value() == "removed":
            return queryset.filter(schedule_removed_at__isnull=False)
        return queryset


@admin.register(Job)
class JobAdmin(EngineDeletes):
    list_display = [
        "id",
        "queue_name",
        "status",
        "priority",
        "attempts_shown",
        "created_at",
        "scheduled_at",
        "tags_shown",
        "short_error",
    ]
    list_filter = [TagFilter, "status", QueueFilter, "priority", "recurring", DeclaredFilter]
    search_fields = ["=id", "queue_name", "error_message", "unique_key", "schedule_name"]
    list_select_related = False
    show_full_result_count = False
    list_per_page = 50
    date_hierarchy = None
    ordering = ["-created_at"]
    paginator = CappedPaginator
    readonly_fields = [f.name for f in Job._meta.fields if f.name not in ("payload", "meta")] + [
        "payload_json",
        "meta_json",
        "failed_attempts_shown",
    ]
    exclude = ["payload", "meta"]
    actions = [
        "retry_now",
        "cancel",
        "mark_dead",
        "release",
        "pause_queues",
        "resume_queues",
        "delete_selected",
    ]
    #: The actions of a job's page, by the transition each is (the page offers those the
    #: job offers).
    form_actions = {
        "retry_now": transitions.RETRY,
        "cancel": transitions.CANCEL,
        "mark_dead": transitions.MARK_DEAD,
        "release": transitions.RELEASE,
    }

    def has_add_permission(self, request) -> bool:
        return False  # enqueue through JobQueue, which validates

    def delete_refusal(self, job: Job) -> str | None:
        return transitions.refusal(transitions.DELETE, job)

    def engine_delete(self, queue: JobQueue, job: Job) -> None:
        queue.delete_job(job.id)

    def get_changelist(self, request, **kwargs):
        return TaggedChangeList

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        action_form = context.get("action_form")
        if obj is not None and action_form is not None:
            offered = transitions.offered(obj)
            field = action_form.fields["action"]
            field.choices = [
                (name, label)
                for name, label in field.choices
                if name not in self.form_actions or self.form_actions[name] in offered
            ]
        return super().render_change_form(request, context, add, change, form_url, obj)

    @admin.display(description="attempts")
    def attempts_shown(self, job: Job) -> str:
        return f"{job.attempts}/{job.max_attempts}"

    @admin.display(description="error")
    def short_error(self, job: Job) -> str:
        return _shortened(job.error_message, 60)

    @admin.display(description="payload")
    def payload_json(self, job: Job):
        return format_html("<pre>{}</pre>", pretty_json(job.payload))

    @admin.display(description="meta")
    def meta_json(self, job: Job):
        return format_html("<pre>{}</pre>", pretty_json(job.meta))

    @admin.display(description="tags")
    def tags_shown(self, job: Job) -> str:
        return ", ".join(job.tags)

    @admin.display(description="failed attempts")
    def failed_attempts_shown(self, job: Job):
        timeline = Timeline(job.id)
        url = reverse("admin:queues_failedattempt_changelist")
        return render_to_string(
            "admin/queues/job_attempts.html",
            {
                "attempts": timeline.attempts,
                "more": timeline.more,
                "all_url": f"{url}?job__id__exact={job.id}",
            },
        )

    @admin.action(description="Retry now", permissions=["change"], location=BOTH)
    def retry_now(self, request, queryset):
        report_acted(self, request, "Retry", JobQueue().retry_jobs(_ids(queryset)))

    @admin.action(description="Cancel", permissions=["change"], location=BOTH)
    def cancel(self, request, queryset):
        reason = f"Cancelled by {request.user.get_username()} in the admin"
        report_acted(self, request, "Cancel", JobQueue().cancel_jobs(_ids(queryset), reason))

    @admin.action(description="Mark dead", permissions=["change"], location=BOTH)
    def mark_dead(self, request, queryset):
        reason = f"Marked dead by {request.user.get_username()} in the admin"
        report_acted(self, request, "Mark dead", JobQueue().mark_jobs_dead(_ids(queryset), reason))

    @admin.action(description="Release (back to Pending)", permissions=["change"], location=BOTH)
    def release(self, request, queryset):
        queue = JobQueue()

        def release(job: Job) -> None:
            transitions.check(transitions.RELEASE, job)
            if not queue.release_job_run(job):
                raise QueueError(f"job {job.id} is no longer Running this run")

        each(self, request, queryset, "Release", release)

    def has_pause_permission(self, request) -> bool:
        return request.user.has_perm("queues.change_queuepause")

    @admin.action(description="Pause their queues", permissions=["pause"])
    def pause_queues(self, request, queryset):
        names, by = _queue_names(queryset), request.user.get_username()
        each(self, request, names, "Pause", JobQueue().pause_queue, paused_by=by)

    @admin.action(description="Resume their queues", permissions=["pause"])
    def resume_queues(self, request, queryset):
        names, by = _queue_names(queryset), request.user.get_username()
        each(self, request, names, "Resume", JobQueue().resume_queue, resumed_by=by)

    def has_change_permission(self, request, obj=None) -> bool:
        # Rows change through the actions only; the form itself is read-only.
        return super().has_change_permission(request, obj) and obj is None


@admin.register(FailedAttempt)
class FailedAttemptAdmin(ReadOnlyAdmin):
    """The error history; its rows go with their job (delete or prune the job)."""

    list_display = [
        "failed_at",
        "job_link",
        "attempt",
        "ended_by",
        "status",
        "exception_class",
        "short_error",
        "worker",
        "handler_end",
    ]
    list_filter = ["ended_by", "handler_end", "status"]
    search_fields = ["=job__id", "exception_class", "error"]
    ordering = ["-id"]
    raw_id_fields = ["job"]

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    @admin.display(description="job")
    def job_link(self, row: FailedAttempt):
        url = reverse("admin:queues_job_change", args=[row.job_id])
        return format_html('<a href="{}">{}</a>', url, row.job_id)

    @admin.display(description="error")
    def short_error(self, row: FailedAttempt) -> str:
        return _shortened(row.error, 80)
