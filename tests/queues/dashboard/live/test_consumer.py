"""The dashboard's WebSocket through the real ASGI application (origin check, session auth,
routing): staff sessions receive the overview partial when a job changes state; anonymous and
non-staff connections are refused. The aggregator really reads the database: on PostgreSQL it
is woken by NOTIFY, elsewhere it reads once a second."""

from __future__ import annotations

import re

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client

from hammerweb.asgi import application
from queues.api import DequeueOptions, Job, JobQueue
from tests.conftest import unique_queue

pytestmark = pytest.mark.django_db(transaction=True)

ORIGIN = (b"origin", b"http://localhost")
#: How long a test waits for a push; the aggregator reads at least once a second.
PUSH_TIMEOUT = 10


def _headers(user: User | None) -> list[tuple[bytes, bytes]]:
    if user is None:
        return [ORIGIN]
    client = Client()
    client.force_login(user)
    return [ORIGIN, (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())]


def _cell(html: str, queue: str, status: str) -> str | None:
    """The text of the overview cell for (queue, status), or None if the row is absent."""
    row = re.search(rf'<tr data-queue="{re.escape(queue)}">(.*?)</tr>', html, re.S)
    if row is None:
        return None
    cell = re.search(rf'data-status="{status}"[^>]*>([^<]*)</td>', row.group(1))
    return cell.group(1) if cell else None


async def _receive_until(communicator, predicate) -> str:
    """The first pushed message that satisfies `predicate` (earlier ones are older states)."""
    while True:
        html = await communicator.receive_from(timeout=PUSH_TIMEOUT)
        if predicate(html):
            return html


def test_a_staff_session_receives_the_overview_after_a_job_changes_state():
    staff = User.objects.create_user("ops", is_staff=True)
    engine, queue = JobQueue(), unique_queue("live")
    engine.enqueue(Job(queue_name=queue, payload={"to": "<b>x</b>"}))
    headers = _headers(staff)

    async def scenario():
        communicator = WebsocketCommunicator(application, "/ws/dashboard/", headers)
        connected, _ = await communicator.connect()
        assert connected
        try:
            html = await _receive_until(communicator, lambda h: _cell(h, queue, "Pending") == "1")
            assert 'id="overview-live"' in html
            assert "hx-swap-oob" not in html  # each top-level element with an id is swapped
            assert "csrfmiddlewaretoken" not in html  # the page's header token is used
            # The state change: the job is claimed (Pending -> Running) by a worker.
            claimed = await _in_thread(lambda: engine.dequeue(queue, DequeueOptions.batch(1)))
            assert len(claimed) == 1
            html = await _receive_until(
                communicator,
                lambda h: _cell(h, queue, "Pending") == "0" and _cell(h, queue, "Running") == "1",
            )
        finally:
            await communicator.disconnect()

    async_to_sync(scenario)()


def test_the_pushed_partial_shows_the_pause_toggle_only_to_those_who_may_pause():
    from django.contrib.auth.models import Permission

    viewer = User.objects.create_user("viewer", is_staff=True)
    operator = User.objects.create_user("operator", is_staff=True)
    operator.user_permissions.set(Permission.objects.filter(codename="change_queuepause"))
    queue = unique_queue("live")
    JobQueue().enqueue(Job(queue_name=queue, payload={}))

    async def first_push(headers) -> str:
        communicator = WebsocketCommunicator(application, "/ws/dashboard/", headers)
        connected, _ = await communicator.connect()
        assert connected
        try:
            return await _receive_until(communicator, lambda h: _cell(h, queue, "Pending") == "1")
        finally:
            await communicator.disconnect()

    assert f'aria-label="Pause {queue}"' in async_to_sync(first_push)(_headers(operator))
    assert f'aria-label="Pause {queue}"' not in async_to_sync(first_push)(_headers(viewer))


def test_the_workers_page_is_pushed_when_a_worker_reports():
    """The workers page has its own socket (/ws/dashboard/workers/): a staff session gets its
    live region, and the new counts once a worker's heartbeat row changes."""
    from queues.models import WorkerProcess

    staff = User.objects.create_user("ops", is_staff=True)
    worker = WorkerProcess.objects.create(hostname="<b>box</b>", pid=4242, queues=["emails"])
    headers = _headers(staff)

    async def scenario():
        communicator = WebsocketCommunicator(application, "/ws/dashboard/workers/", headers)
        connected, _ = await communicator.connect()
        assert connected
        try:
            html = await _receive_until(communicator, lambda h: "4242" in h)
            assert 'id="workers-live"' in html
            assert "&lt;b&gt;box&lt;/b&gt;" in html and "<b>box" not in html
            # A heartbeat: 17 jobs processed. On PostgreSQL no NOTIFY wakes the aggregator
            # for it (not a job's state), so it shows at the next timed read.
            await _in_thread(
                lambda: WorkerProcess.objects.filter(pk=worker.pk).update(jobs_processed=17)
            )
            html = await _receive_until(communicator, lambda h: ">17<" in h)
        finally:
            await communicator.disconnect()

    async_to_sync(scenario)()


def test_the_reaper_page_is_pushed_with_its_expired_leases():
    from datetime import timedelta

    staff = User.objects.create_user("ops", is_staff=True)
    engine, queue = JobQueue(), unique_queue("live_reaper")
    engine.enqueue(Job(queue_name=queue, payload={}))
    lease = DequeueOptions.batch(1).with_lease_duration(timedelta(milliseconds=1))
    [run] = engine.dequeue(queue, lease)
    headers = _headers(staff)

    async def scenario():
        communicator = WebsocketCommunicator(application, "/ws/dashboard/reaper/", headers)
        connected, _ = await communicator.connect()
        assert connected
        try:
            html = await _receive_until(communicator, lambda h: str(run.id)[:8] in h)
            assert 'id="reaper-live"' in html and queue in html
        finally:
            await communicator.disconnect()

    async_to_sync(scenario)()


def test_the_recurring_page_shows_its_buttons_only_to_those_who_may_change_jobs():
    from django.contrib.auth.models import Permission

    viewer = User.objects.create_user("viewer", is_staff=True)
    operator = User.objects.create_user("operator", is_staff=True)
    operator.user_permissions.set(Permission.objects.filter(codename="change_job"))
    queue = unique_queue("live_cron")
    JobQueue().enqueue(Job(queue_name=queue, cron_schedule="0 0 * * * *", timezone="UTC"))

    def first_push(headers) -> str:
        async def scenario():
            communicator = WebsocketCommunicator(application, "/ws/dashboard/recurring/", headers)
            connected, _ = await communicator.connect()
            assert connected
            try:
                return await _receive_until(communicator, lambda h: queue in h)
            finally:
                await communicator.disconnect()

        return async_to_sync(scenario)()

    pushed = first_push(_headers(operator))
    assert 'id="recurring-live"' in pushed and ">Disable</button>" in pushed
    assert "csrfmiddlewaretoken" not in pushed
    assert ">Disable</button>" not in first_push(_headers(viewer))


def test_an_unknown_page_is_refused():
    headers = _headers(User.objects.create_user("ops", is_staff=True))

    async def scenario():
        communicator = WebsocketCommunicator(application, "/ws/dashboard/queue/", headers)
        connected, _ = await communicator.connect()
        await communicator.disconnect()
        return connected

    assert async_to_sync(scenario)() is False


@pytest.mark.parametrize("who", ["anonymous", "not staff", "inactive staff"])
def test_a_connection_without_a_staff_session_is_refused(who):
    user = {
        "anonymous": lambda: None,
        "not staff": lambda: User.objects.create_user("plain"),
        "inactive staff": lambda: User.objects.create_user("gone", is_staff=True, is_active=False),
    }[who]()
    assert _connects(_headers(user)) is False


def test_a_connection_from_a_foreign_origin_is_refused():
    staff = User.objects.create_user("ops", is_staff=True)
    assert _connects(_headers(staff)) is True
    assert _connects([(b"origin", b"http://evil.example"), *_headers(staff)[1:]]) is False


def _connects(headers) -> bool:
    async def scenario():
        communicator = WebsocketCommunicator(application, "/ws/dashboard/", headers)
        connected, _ = await communicator.connect()
        await communicator.disconnect()
        return connected

    return async_to_sync(scenario)()


async def _in_thread(fn):
    """`fn` in a thread of its own, as a worker process would run it, off the event loop."""

    def run():
        try:
            return fn()
        finally:
            connection.close()

    return await sync_to_async(run, thread_sensitive=False)()
