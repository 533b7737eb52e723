"""The pages' live partials, rendered once per audience for the push. Pushed pages (`PAGES`)
are those whose live region is the same for every viewer: one rendering, and one channels
group, per page and set of gated permissions. No CSRF token is rendered (it would be no
one's): htmx sends the page's own in a header. See docs/design/dashboard.md."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from django.http import HttpRequest
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from queues.reads import stats

PARTIAL = "hammerweb/overview.html#overview-live"
#: The permissions the overview partial checks (the pause toggle).
AUDIENCE_PERMISSIONS = ("queues.change_queuepause",)

Audience = tuple[str, ...]


@dataclass(frozen=True)
class Page:
    partial: str
    #: The permissions its partial checks: one rendering per subset a viewer has.
    permissions: tuple[str, ...]
    #: The page's context (one database read for every audience), given the time.
    read: Callable[[datetime], dict]


def _overview(now: datetime) -> dict:
    return {"overview": stats.overview(now)}


def _workers(now: datetime) -> dict:
    return {"workers": stats.workers(now), "stale_after": stats.WORKER_STALE_AFTER}


def _reaper(now: datetime) -> dict:
    return {"runs": stats.reaper_runs(), "expired": stats.expired_leases(now)}


def _recurring(now: datetime) -> dict:
    return {"jobs": stats.recurring_jobs()}


PAGES = {
    "overview": Page(PARTIAL, AUDIENCE_PERMISSIONS, _overview),
    "workers": Page("hammerweb/workers.html#workers-live", (), _workers),
    "reaper": Page("hammerweb/reaper.html#reaper-live", (), _reaper),
    # Enable/Disable buttons for those who may change jobs, Run now for who may add one.
    "recurring": Page(
        "hammerweb/recurring.html#recurring-live",
        ("queues.add_job", "queues.change_job"),
        _recurring,
    ),
}


def audience_of(user, page: str = "overview") -> Audience:
    """The gated permissions of `page` that `user` has (a database read: call it off the
    event loop)."""
    return tuple(perm for perm in PAGES[page].permissions if user.has_perm(perm))


def group_of(audience: Audience, page: str = "overview") -> str:
    """The channels group of a page's audience (ASCII letters, digits, '-', '_', '.')."""
    return ".".join([f"dashboard-{page}", *audience]).replace("queues.", "")


def render_overview(audiences: list[Audience]) -> dict[Audience, str]:
    """One database read of the overview, rendered for each audience."""
    return render_page("overview", audiences)


def render_page(page: str, audiences: list[Audience]) -> dict[Audience, str]:
    """One database read of `page`'s live region, rendered for each audience."""
    spec = PAGES[page]
    now = timezone.now()
    context = spec.read(now)
    request = HttpRequest()
    request.method = "GET"
    request.path = request.path_info = reverse(f"dashboard:{page}")
    rendered = {}
    for audience in audiences:
        perms: dict[str, dict[str, bool]] = {}
        for perm in spec.permissions:
            app, codename = perm.split(".")
            perms.setdefault(app, {})[codename] = perm in audience
        rendered[audience] = render_to_string(
            spec.partial,
            {
                **context,
                "now": now,
                "request": request,
                "perms": perms,
                "pushed": True,  # no {% csrf_token %}; see the module docstring
            },
        )
    return rendered
