"""The dashboard included under a prefix (`path("ops/jobs/", include("queues.urls"))`):
every link, htmx request, form and the WebSocket URL of every page follow it."""

from __future__ import annotations

import re

import pytest
from asgiref.sync import async_to_sync
from django.test import AsyncClient

from tests.queues.dashboard.views.conftest import enqueue, make_dead

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.queues.support.mounted_urls")]

MOUNT = "/ops/jobs/"
URLS = re.compile(r'\b(?:href|src|action|hx-get|hx-post|ws-connect)="([^"]*)"')


def _outside(html: str) -> set[str]:
    return {
        url for url in URLS.findall(html)
        if url.startswith("/") and not url.startswith((MOUNT, "/static/", "/admin/"))
    }


def test_every_page_stays_under_the_mount(operator_client, engine, qname):
    job = make_dead(engine, qname)
    enqueue(engine, qname)
    paths = ["", f"queues/{qname}/", f"jobs/{job.id}/", "reaper/", "batches/", "recurring/",
             "workers/"]
    for path in paths:
        response = operator_client.get(MOUNT + path)
        assert response.status_code == 200, path
        html = response.text
        assert _outside(html) == set(), path
        assert f'href="{MOUNT}reaper/"' in html  # the navigation
    overview = operator_client.get(MOUNT).text
    assert f'hx-post="{MOUNT}actions/pause/"' in overview
    assert f'hx-get="{MOUNT}"' in overview
    # Under WSGI (the test client) no socket is opened: the live regions poll.
    assert "ws-connect" not in overview


def test_an_action_under_the_mount(operator_client, engine, qname):
    enqueue(engine, qname)
    response = operator_client.post(f"{MOUNT}actions/pause/", {"queue": qname},
                                    headers={"HX-Request": "true"})
    assert response.status_code == 200
    assert engine.is_queue_paused(qname)


def test_over_asgi_the_pages_open_their_socket_under_the_mount(operator):
    client = AsyncClient()

    async def pages():
        await client.aforce_login(operator)
        return [(await client.get(MOUNT + path)).text for path in ("", "workers/", "reaper/")]

    overview, workers, reaper = async_to_sync(pages)()
    assert f'ws-connect="{MOUNT}ws/dashboard/"' in overview
    assert f'ws-connect="{MOUNT}ws/dashboard/workers/"' in workers
    assert f'ws-connect="{MOUNT}ws/dashboard/reaper/"' in reaper
