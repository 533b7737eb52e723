"""The error groups page: the failed attempts of a window grouped by exception class and
normalized message (`queues.reads.error_groups`), with "retry all in this group" as a bulk
operation (`queues.ops.bulk`, the jobs list's "retry all matching"). Its `errors-notice`
partial is what the overview and the history load to point at new or growing groups.
See docs/design/dashboard.md."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone

from queues.dashboard.views.access import action, notice, page
from queues.ops import bulk
from queues.reads import error_groups
from queues.reads.search import SearchFilter


@page(live=("errors-live", "errors-notice"))
def errors(request):
    window = error_groups.window_of(request.GET.get("window", ""))
    now = timezone.now()
    return "hammerweb/errors.html", {
        "result": error_groups.groups(window, now),
        "windows": error_groups.WINDOWS.values(),
        "window": window,
        "can_retry": request.user.has_perm("queues.change_job"),
        "row_cap": error_groups.ROW_CAP,
        "retry_cap": error_groups.RETRY_CAP,
        "now": now,
    }


@action("queues.change_job")
def retry_group(request, queue):
    """Retry the failed jobs of one group (the window's newest `RETRY_CAP`) as a background
    operation; its progress on the bulk operation's page. A group gone meanwhile (or a key
    that names none) is a notice, not an error page."""
    window = error_groups.window_of(request.POST.get("window", ""))
    key = request.POST.get("group", "")
    group = error_groups.find(window, timezone.now(), key) if key.isalnum() else None
    if group is None:
        return notice(request, "No such error group in this window (any more).", messages.ERROR)
    chosen = f"the failed jobs of error group {group.label[:200]!r} ({window.label})"
    flt = SearchFilter(job_ids=[str(job_id) for job_id in group.job_ids], chosen=chosen)
    op = bulk.start(flt, "retry", request.user.get_username())
    url = reverse("dashboard:bulk-operation", args=[op.pk])
    if request.htmx:
        response = render(request, "hammerweb/notice.html", {
            "text": f"Retrying up to {op.total:,} jobs of this group: see operation #{op.pk}.",
            "level": "success",
        })  # fmt: skip
        response["HX-Redirect"] = url
        return response
    return redirect(url)
