"""The overview in a real browser against the ASGI server: once the WebSocket is open the
2 s poll stands down, and a count changes through the WebSocket alone."""

from __future__ import annotations

import pytest

from queues.api import Job, JobQueue
from tests.browser.conftest import log_in
from tests.conftest import unique_queue

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


def _refuse_polls(page) -> list:
    """From now on every htmx request (a poll) is refused; the list collects their URLs."""
    polls: list = []

    def refuse(route):
        if route.request.headers.get("hx-request"):
            polls.append(route.request.url)
            route.abort()
        else:
            route.continue_()

    page.route("**/*", refuse)
    return polls


def test_a_count_changes_through_the_websocket_alone(asgi_page):
    page, engine, queue = asgi_page, JobQueue(), unique_queue("ws")
    engine.enqueue(Job(queue_name=queue, payload={}))
    page.reload()
    pending = page.locator(f'tr[data-queue="{queue}"] td[data-status="Pending"]')
    expect(pending).to_have_text("1")
    # The socket is open: live.js marked <body>, so the poll's trigger filter is false.
    expect(page.locator("body[data-ws-live]")).to_have_count(1)
    # From now on any poll (an htmx GET) would be refused, and is counted.
    polls = _refuse_polls(page)
    page.evaluate("window.notReloaded = true")
    engine.enqueue(Job(queue_name=queue, payload={}))
    expect(pending).to_have_text("2", timeout=5_000)
    assert page.evaluate("window.notReloaded") is True
    assert polls == []


def test_the_workers_page_changes_through_the_websocket_alone(asgi_page, asgi_server):
    from queues.models import WorkerProcess

    page = asgi_page
    worker = WorkerProcess.objects.create(hostname="ws-box", pid=31337, queues=["emails"])
    page.goto(f"{asgi_server}/workers/")
    row = page.locator("#workers-live tr", has_text="ws-box")
    expect(row).to_have_count(1)
    expect(page.locator("body[data-ws-live]")).to_have_count(1)
    polls = _refuse_polls(page)
    page.evaluate("window.notReloaded = true")
    WorkerProcess.objects.filter(pk=worker.pk).update(jobs_processed=4321)
    # Pushed at the aggregator's next read (on PostgreSQL its 5 s timer: a heartbeat sends
    # no NOTIFY).
    expect(row).to_contain_text("4.3k", timeout=10_000)
    assert page.evaluate("window.notReloaded") is True
    assert polls == []
