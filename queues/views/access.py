"""What every dashboard view shares: staff login, permission checks, partial rendering, and
the answer to an action (a notice in place plus a `refresh` event for the live regions)."""

from __future__ import annotations

from functools import wraps

from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from ..exceptions import QueueError
from ..queue import JobQueue


def page(live: tuple[str, ...] = ()):
    """A staff-only GET page. An htmx request whose target is one of `live` gets only that
    partial of the page's template (the view returns (template, context))."""

    def decorate(view):
        @wraps(view)
        def wrapper(request, *args, **kwargs):
            template, context = view(request, *args, **kwargs)
            target = request.htmx.target if request.htmx else None
            if target in live:
                template = f"{template}#{target}"
            return render(request, template, context)

        return staff_member_required(require_GET(wrapper))

    return decorate


def action(*permissions: str):
    """A staff-only POST that needs `permissions`: 403 without them (the buttons are not
    shown either). CSRF is checked by the middleware. The view gets a `JobQueue`; an engine
    refusal (`QueueError`) it lets through becomes an error notice."""

    def decorate(view):
        @wraps(view)
        def wrapper(request, *args, **kwargs):
            if not request.user.has_perms(permissions):
                raise PermissionDenied("You may look but not change this.")
            try:
                return view(request, JobQueue(), *args, **kwargs)
            except QueueError as exc:
                return notice(request, str(exc), messages.ERROR)

        return staff_member_required(require_POST(wrapper))

    return decorate


def notice(request, text: str, level: int = messages.SUCCESS):
    """The result of an action: for htmx a notice swapped in place (and every live region
    told to refresh); without JavaScript a message on the page we go back to."""
    if request.htmx:
        response = render(
            request, "hammerweb/notice.html", {"text": text, "level": messages.DEFAULT_TAGS[level]}
        )
        response["HX-Trigger"] = "refresh"
        return response
    messages.add_message(request, level, text)
    return redirect(back_url(request))


def back_url(request) -> str:
    target = request.POST.get("next") or request.headers.get("referer") or ""
    if url_has_allowed_host_and_scheme(target, {request.get_host()}, request.is_secure()):
        return target
    return "dashboard:overview"
