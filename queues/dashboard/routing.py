"""The dashboard's WebSocket routes, for the project's ASGI router (channels):
`URLRouter([*queues.routing.websocket_urlpatterns, *your_routes])`. A page's socket is its
mount followed by `ws/dashboard/` (and the page's name), so it follows the pages wherever
they are included; `socket_url` says where a page opens it, or that it polls.
See docs/design/dashboard.md."""

from __future__ import annotations

from django.conf import settings
from django.core.handlers.asgi import ASGIRequest
from django.urls import re_path, reverse

from queues import conf
from queues.dashboard.live.consumer import DashboardConsumer

SOCKET_SUFFIX = "ws/dashboard/"

websocket_urlpatterns = [
    re_path(
        r"^(?:.+/)?ws/dashboard/(?:(?P<page>[-\w]+)/)?$",
        DashboardConsumer.as_asgi(),
        name="dashboard-socket",
    ),
]


def socket_url(request, page: str = "overview") -> str | None:
    """Where `page` (one of `live.render.PAGES`) opens its socket, or None where it has none
    to open: the request did not come through ASGI (a WSGI server has no WebSocket), there
    is no channel layer for the push, or `HAMMERWEB["WEBSOCKET"]` is off. Without a socket
    the page polls."""
    if not isinstance(request, ASGIRequest) or not conf.get("WEBSOCKET"):
        return None
    if "default" not in getattr(settings, "CHANNEL_LAYERS", {}):
        return None
    url = reverse("dashboard:overview") + SOCKET_SUFFIX
    return url if page == "overview" else f"{url}{page}/"
