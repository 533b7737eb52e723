"""The operations pages: the reaper (its runs and the expired leases), recurring jobs, worker
processes, and the history of completions, failures and retries.
See docs/design/dashboard.md."""

from __future__ import annotations

from django.utils import timezone

from queues.dashboard.views.access import page
from queues.reads import stats, trends


@page(live=("reaper-live",))
def reaper(request):
    now = timezone.now()
    return "hammerweb/reaper.html", {
        "runs": stats.reaper_runs(),
        "expired": stats.expired_leases(now),
        "now": now,
    }


@page(live=("recurring-live",))
def recurring(request):
    return "hammerweb/recurring.html", {"jobs": stats.recurring_jobs(), "now": timezone.now()}


@page(live=("workers-live",))
def workers(request):
    return "hammerweb/workers.html", {
        "workers": stats.workers(),
        "stale_after": stats.WORKER_STALE_AFTER,
        "now": timezone.now(),
    }


@page(live=("history-live",))
def history(request):
    """Completions, failures and retries per queue over a window, with percentiles; a
    window or queue the page did not offer is the default window, or no such queue."""
    window = trends.WINDOWS.get(
        request.GET.get("window", ""), trends.WINDOWS[trends.DEFAULT_WINDOW]
    )
    only = request.GET.get("queue") or None
    now = timezone.now()
    return "hammerweb/history.html", {
        "window": window,
        "windows": trends.WINDOWS.values(),
        "queues": trends.history(window, now, None if only is None else [only]),
        "only": only,
        "sample": trends.SAMPLE,
        "now": now,
    }
