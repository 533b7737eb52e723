"""The admin's base classes for the engine's tables: junk in a request is a 400, rows are
deleted through the engine (with its refusals), never by the cascade of Django's `delete()`,
a table keyed by queue name checks the name as the engine does, and the engine's own records
are read-only. Also how an action reports: how many it did and the first refusal."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import ActionLocation, helpers
from django.contrib.admin.actions import delete_selected as django_delete_selected
from django.core.exceptions import BadRequest, ValidationError
from django.db import transaction
from django.http import HttpResponseRedirect
from django.utils.translation import gettext_lazy

from queues.dashboard.views.access import check_input
from queues.engine.queue import JobQueue
from queues.exceptions import InvalidQueueName, QueueError
from queues.models import JobDependency
from queues.validation import validate_queue_name

#: Where an action on a row is offered: the changelist and the row's own page.
BOTH = [ActionLocation.CHANGE_LIST, ActionLocation.CHANGE_FORM]


def each(modeladmin, request, rows, verb: str, call, *args, **kwargs) -> None:
    """Call `call(row, *args, **kwargs)` for each row; report how many succeeded and the first
    refusal."""
    done, refused = 0, []
    for row in rows:
        try:
            call(row, *args, **kwargs)
            done += 1
        except QueueError as exc:
            refused.append(str(exc))
    report(modeladmin, request, verb, done, refused)


def report(modeladmin, request, verb: str, done: int, refused: list[str]) -> None:
    if done:
        modeladmin.message_user(request, f"{verb}: {done} done.", messages.SUCCESS)
    if refused:
        more = f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""
        modeladmin.message_user(request, f"{verb} refused: {refused[0]}{more}", messages.ERROR)


def report_acted(modeladmin, request, verb: str, result) -> None:
    """Report a `JobsActed` (of `retry_jobs`, `cancel_jobs`...) as `each` reports."""
    report(modeladmin, request, verb, len(result.done), result.refusals())


class QueueNameForm(forms.ModelForm):
    """The form of a table keyed by queue name (pauses, limits): a name the engine would
    refuse is the form's error."""

    def clean_queue_name(self) -> str:
        try:
            return validate_queue_name(self.cleaned_data["queue_name"])
        except InvalidQueueName as exc:
            raise ValidationError(str(exc)) from exc


class GuardedAdmin(admin.ModelAdmin):
    """Junk in a request is a 400, never a 500: text no column holds (a NUL character, which
    PostgreSQL refuses even in a filter), or selected ids that are not ids (Django's action
    handling lets the ValidationError of a malformed UUID out)."""

    def _check(self, request, object_id=None) -> None:
        check_input(request, {"object_id": object_id})
        for pk in request.POST.getlist(helpers.ACTION_CHECKBOX_NAME):
            try:
                # Within the column's range too: SQLite overflows on a 20-digit integer.
                self.opts.pk.run_validators(self.opts.pk.to_python(pk))
            except ValidationError as exc:
                raise BadRequest("A selected row is not an id.") from exc

    def changelist_view(self, request, extra_context=None):
        self._check(request)
        return super().changelist_view(request, extra_context)

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        self._check(request, object_id)
        return super().changeform_view(request, object_id, form_url, extra_context)

    def delete_view(self, request, object_id, extra_context=None):
        self._check(request, object_id)
        return super().delete_view(request, object_id, extra_context)

    def history_view(self, request, object_id, extra_context=None):
        self._check(request, object_id)
        return super().history_view(request, object_id, extra_context)


class EngineDeletes(GuardedAdmin):
    """Rows deleted through the engine, never by the cascade of Django's `delete()`: the
    delete view, its bulk action and `delete_queryset` call `engine_delete`, and what the
    engine would refuse (`delete_refusal`) is listed on the confirmation page as what
    prevents the deletion, which then does not happen."""

    actions = ["delete_selected"]

    def delete_refusal(self, obj) -> str | None:
        raise NotImplementedError

    def engine_delete(self, queue: JobQueue, obj) -> None:
        raise NotImplementedError

    def get_deleted_objects(self, objs, request):
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        # Dependency edges cannot be deleted alone, but the engine deletes a job's with it.
        perms_needed.discard(JobDependency._meta.verbose_name)
        refusals = [reason for reason in map(self.delete_refusal, objs) if reason]
        return deleted, counts, perms_needed, [*protected, *refusals]

    def delete_model(self, request, obj) -> None:
        self.engine_delete(JobQueue(), obj)

    def delete_queryset(self, request, queryset) -> None:
        queue = JobQueue()
        for obj in queryset:
            self.engine_delete(queue, obj)

    def delete_view(self, request, object_id, extra_context=None):
        try:
            return super().delete_view(request, object_id, extra_context)
        except QueueError as exc:  # refused after the confirmation page was drawn
            self.message_user(request, f"Delete refused: {exc}", messages.ERROR)
            return HttpResponseRedirect(request.get_full_path())

    @admin.action(
        permissions=["delete"], description=gettext_lazy("Delete selected %(verbose_name_plural)s")
    )
    def delete_selected(self, request, queryset):
        try:
            with transaction.atomic(using=queryset.db):  # all of them or none
                return django_delete_selected(self, request, queryset)
        except QueueError as exc:
            self.message_user(request, f"Delete refused: {exc}", messages.ERROR)
            return None


class ReadOnlyAdmin(GuardedAdmin):
    """Rows written by the engine and the workers: looked at, never edited by hand."""

    show_full_result_count = False
    list_per_page = 50

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
