"""The reaper, recurring jobs and worker processes."""

from __future__ import annotations

from django.utils import timezone

from .. import stats
from .access import page


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
