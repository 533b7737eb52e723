"""The overview in a real browser against the ASGI server: once the WebSocket is open the
2 s poll stands down, and a count changes through the WebSocket alone."""

from __future__ import annotations

import pytest

from queues.api import Job, JobQueue
from tests.conftest import unique_queue

from .conftest import log_in

sync_api = pytest.importorskip("playwright.sync_api")
expect = sync_api.expect

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def asgi_page(browser, asgi_server, staff):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(15_000)
    log_in(page, asgi_server)
    yield page
    context.close()


def test_a_count_changes_through_the_websocket_alone(asgi_page):
    page, engine, queue = asgi_page, JobQueue(), unique_queue("ws")
    engine.enqueue(Job(queue_name=queue, payload={}))
    page.reload()
    pending = page.locator(f'tr[data-queue="{queue}"] td[data-status="Pending"]')
    expect(pending).to_have_text("1")
    # The socket is open: live.js marked <body>, so the poll's trigger filter is false.
    expect(page.locator("body[data-ws-live]")).to_have_count(1)
    # From now on any poll (an htmx GET) would be refused, and is counted.
    polls = []

    def refuse_polls(route):
        if route.request.headers.get("hx-request"):
            polls.append(route.request.url)
            route.abort()
        else:
            route.continue_()

    page.route("**/*", refuse_polls)
    page.evaluate("window.notReloaded = true")
    engine.enqueue(Job(queue_name=queue, payload={}))
    expect(pending).to_have_text("2", timeout=5_000)
    assert page.evaluate("window.notReloaded") is True
    assert polls == []
