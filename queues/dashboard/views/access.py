"""What every dashboard view shares: staff login, permission checks, partial rendering, the
refusal of text no column can store, and the answer to an action (a notice in place plus a
`refresh` event for the live regions). See docs/design/dashboard.md."""

from __future__ import annotations

from functools import wraps

from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.core.exceptions import BadRequest, PermissionDenied
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from queues.engine.queue import JobQueue
from queues.exceptions import QueueError
from queues.text import unstorable


def page(live: tuple[str, ...] = ()):
    """A staff-only GET page. An htmx request whose target is one of `live` gets only that
    partial of the page's template (the view returns (template, context))."""

    def decorate(view):
        @wraps(view)
        def wrapper(request, *args, **kwargs):
            check_input(request, kwargs)
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
            check_input(request, kwargs)
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


def check_input(request, kwargs=None) -> None:
    """Refuse (400) a request whose parameters, POST fields or path hold text no database
    column can hold (a NUL character): no query could match it, and PostgreSQL refuses to
    be asked. Every other value is the view's to check."""
    values = [value for _, values in request.GET.lists() for value in values]
    if request.method == "POST":
        values += [value for _, values in request.POST.lists() for value in values]
    values += [value for value in (kwargs or {}).values() if isinstance(value, str)]
    for value in values:
        problem = unstorable(value)
        if problem:
            raise BadRequest(f"The request holds {problem}.")


def back_url(request) -> str:
    """Where an action without htmx goes back to: the page it came from, if that is a path
    on this site (anything else, e.g. a bare word, is no place to go back to)."""
    target = request.POST.get("next") or request.headers.get("referer") or ""
    allowed = url_has_allowed_host_and_scheme(target, {request.get_host()}, request.is_secure())
    if allowed and target.startswith(("/", "http://", "https://")):
        return target
    return reverse("dashboard:overview")
