"""The all-queues jobs page and "retry / cancel / delete all N matching": a confirmation
that shows the count, the start of a background operation (`queues.ops.bulk`), its progress
(polled in place) and its cancel. The permissions are those of the same action on selected
jobs (`actions.JOB_ACTIONS`). See docs/design/dashboard.md."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET

from queues.dashboard.views.access import action, back_url, check_input, notice, page
from queues.dashboard.views.actions import JOB_ACTIONS
from queues.enums import PRIORITY_CHOICES, JobStatus
from queues.models import BulkOperation
from queues.ops import bulk
from queues.reads.archived_search import archived_matches
from queues.reads.search import SearchFilter
from queues.reads.search_page import count_matches, search_jobs


def can_bulk(user) -> dict:
    """Which "all matching" buttons `user` is offered."""
    change, delete = user.has_perm("queues.change_job"), user.has_perm("queues.delete_job")
    return {"retry": change, "cancel": change, "delete": delete}


@page(live=("jobs-list",))
def jobs(request):
    flt = SearchFilter.from_query(request.GET)
    return "hammerweb/jobs.html", {
        "filter": flt,
        "page": search_jobs(flt, request.GET.get("after", "")),
        "archived": archived_matches(flt) if not request.GET.get("after") else [],
        "statuses": JobStatus.values,
        "priorities": PRIORITY_CHOICES,
        "bulk_actions": can_bulk(request.user),
        "bulk_query": flt.query(),
        "now": timezone.now(),
    }


def _filter(request) -> SearchFilter:
    """The filter a bulk form carries (its fields are the page's query parameters)."""
    return SearchFilter.from_query(request.POST, queue=request.POST.get("fixed_queue", ""))


def _verb(request) -> str:
    """The action asked for ("" if none is), once the user may do it."""
    verb = request.POST.get("action", "")
    if verb in JOB_ACTIONS and not request.user.has_perm(JOB_ACTIONS[verb][0]):
        raise PermissionDenied("You may look but not change this.")
    return verb if verb in JOB_ACTIONS else ""


def _asked(request):
    """The action and the filter a bulk form asks for, and a notice if either is wrong."""
    verb, flt = _verb(request), _filter(request)
    return verb, flt, _refusal(request, verb, flt)


def _refusal(request, verb: str, flt: SearchFilter):
    if not verb:
        return notice(request, "Choose retry, cancel or delete.", messages.ERROR)
    if flt.problems:
        return notice(request, " ".join(flt.problems), messages.ERROR)
    return None


@action()
def confirm(request, queue):
    """Step one: how many jobs the filter matches now, and a button to go ahead."""
    verb, flt, refused = _asked(request)
    if refused is not None:
        return refused
    fields = {**flt.query(), "fixed_queue": request.POST.get("fixed_queue", "")}
    context = {
        "verb": verb,
        "filter": flt,
        "count": count_matches(flt),
        "fields": fields,
        "back": back_url(request),
    }
    if request.htmx:
        return render(request, "hammerweb/bulk_panel.html#bulk-confirm", context)
    return render(request, "hammerweb/bulk_panel.html", context)


@action()
def start(request, queue):
    """Step two: the operation is written, a runworker carries it out; its progress in place."""
    verb, flt, refused = _asked(request)
    if refused is not None:
        return refused
    op = bulk.start(flt, verb, request.user.get_username())
    if request.htmx:
        return _panel(request, op)
    return redirect(reverse("dashboard:bulk-operation", args=[op.pk]))


@staff_member_required
@require_GET
def operation(request, op_id: int):
    """The operation's progress: a page, or (htmx) the panel that polls itself."""
    check_input(request)
    op = get_object_or_404(BulkOperation, pk=op_id)
    if request.htmx:
        return _panel(request, op)
    return render(request, "hammerweb/bulk_panel.html", _progress(op))


@action()
def cancel(request, queue, op_id: int):
    op = get_object_or_404(BulkOperation, pk=op_id)
    if not request.user.has_perm(JOB_ACTIONS[op.action][0]):
        raise PermissionDenied("You may look but not change this.")
    if not op.finished:
        bulk.cancel(op, request.user.get_username())
        op.refresh_from_db()
    if request.htmx:
        return _panel(request, op)
    return redirect(reverse("dashboard:bulk-operation", args=[op.pk]))


def _panel(request, op: BulkOperation):
    """The progress panel, swapped in place. Once the operation has finished, the page's lists
    are told to redraw (the `refresh` event an action sends): the jobs it changed show their
    new status without a reload. The panel stops polling then, so it is told once."""
    response = render(request, "hammerweb/bulk_panel.html#bulk-progress", _progress(op))
    if op.finished:
        response["HX-Trigger"] = "refresh"
    return response


def _progress(op: BulkOperation) -> dict:
    return {"op": op, "now": timezone.now()}
