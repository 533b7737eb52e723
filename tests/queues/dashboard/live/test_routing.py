"""queues.routing: the socket's route follows any mount, and a page opens a socket only
where there is one to open (ASGI, a channel layer, HAMMERWEB["WEBSOCKET"] on)."""

from __future__ import annotations

import pytest
from django.test import AsyncRequestFactory, RequestFactory, override_settings

from queues.routing import socket_url, websocket_urlpatterns


@pytest.mark.parametrize(
    ("path", "page"),
    [
        ("ws/dashboard/", None),
        ("ws/dashboard/workers/", "workers"),
        ("ops/jobs/ws/dashboard/", None),
        ("ops/jobs/ws/dashboard/reaper/", "reaper"),
    ],
)
def test_the_route_accepts_any_mount(path, page):
    (route,) = websocket_urlpatterns
    match = route.pattern.match(path)
    assert match is not None
    assert match[2].get("page") == page


@pytest.mark.parametrize("path", ["ws/dashboardx/", "ops/ws/dashboard/a/b/", "jobs/", ""])
def test_the_route_takes_nothing_else(path):
    (route,) = websocket_urlpatterns
    assert route.pattern.match(path) is None


def test_a_page_served_over_asgi_opens_its_socket_under_the_mount():
    request = AsyncRequestFactory().get("/")
    assert socket_url(request) == "/ws/dashboard/"
    assert socket_url(request, "workers") == "/ws/dashboard/workers/"
    with override_settings(ROOT_URLCONF="tests.queues.support.mounted_urls"):
        assert socket_url(request, "workers") == "/ops/jobs/ws/dashboard/workers/"


def test_no_socket_under_wsgi_without_a_layer_or_when_turned_off(settings):
    assert socket_url(RequestFactory().get("/")) is None
    request = AsyncRequestFactory().get("/")
    settings.HAMMERWEB = {"WEBSOCKET": False}
    assert socket_url(request) is None
    settings.HAMMERWEB = {}
    del settings.CHANNEL_LAYERS
    assert socket_url(request) is None
