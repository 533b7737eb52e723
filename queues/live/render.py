"""The overview's live partial, rendered once per audience for the push.

The pushed HTML is the same `{% partialdef %}` the 2 s poll returns, so htmx's ws extension
swaps it out-of-band by its id. It cannot depend on one user: what differs between users is
only which permission-gated buttons show (`AUDIENCE_PERMISSIONS`), so there is one rendering,
and one channels group, per set of those permissions. No CSRF token is rendered into the
forms: htmx sends the page's token in the `X-CSRFToken` header (`hx-headers` on <body>), and a
token rendered here would belong to no one's session.
"""

from __future__ import annotations

from django.http import HttpRequest
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from .. import stats

PARTIAL = "dashboard/overview.html#overview-live"
#: The permissions the overview partial checks (the pause toggle).
AUDIENCE_PERMISSIONS = ("queues.change_queuepause",)

Audience = tuple[str, ...]


def audience_of(user) -> Audience:
    """The gated permissions `user` has (a database read: call it off the event loop)."""
    return tuple(perm for perm in AUDIENCE_PERMISSIONS if user.has_perm(perm))


def group_of(audience: Audience) -> str:
    """The channels group of an audience (ASCII letters, digits, '-', '_', '.')."""
    return ".".join(["dashboard-overview", *audience]).replace("queues.", "")


def render_overview(audiences: list[Audience]) -> dict[Audience, str]:
    """One database read of the overview, rendered for each audience."""
    now = timezone.now()
    overview = stats.overview(now)
    request = HttpRequest()
    request.method = "GET"
    request.path = request.path_info = reverse("dashboard:overview")
    rendered = {}
    for audience in audiences:
        perms: dict[str, dict[str, bool]] = {}
        for perm in AUDIENCE_PERMISSIONS:
            app, codename = perm.split(".")
            perms.setdefault(app, {})[codename] = perm in audience
        context = {
            "overview": overview,
            "now": now,
            "request": request,
            "perms": perms,
            "pushed": True,  # no {% csrf_token %}; see the module docstring
        }
        rendered[audience] = render_to_string(PARTIAL, context)
    return rendered
