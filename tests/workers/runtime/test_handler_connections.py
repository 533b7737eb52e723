"""Handlers that use the ORM get a usable connection for every job, and a run that fails only
because the database went away is given back (attempt not counted, no backoff) instead of
being spent. The handlers' connections are killed on the server, as a restart kills them."""

from __future__ import annotations

import asyncio
import threading
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.db import connection, connections

from queues.api import Job, JobQueue, JobStatus
from tests.conftest import unique_queue
from tests.pgbouncer.pooling import skip_through_a_pooler
from tests.workers.support.handler_runs import backend_id, kill_backend, record_run, runs_per_job
from tests.workers.support.helpers import running, wait_for_status, wait_until
from workers.api import Worker
from workers.runtime.connections import _quiet
from workers.runtime.state import MAX_GIVEN_BACK

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def own_server_sessions(transactional_db):
    """These tests end a connection's server session by its id: not through a pool."""
    skip_through_a_pooler()


server_only = pytest.mark.skipif(
    connection.vendor == "sqlite", reason="SQLite has no server sessions"
)
FAST = timedelta(milliseconds=20)


def worker_for(queue, name, handler, **settings) -> Worker:
    return Worker(queue, name, handler, poll_interval=FAST, **settings)


@server_only
@pytest.mark.parametrize("health_checks", [True, False], ids=["health-checks", "no-checks"])
def test_a_connection_that_died_between_jobs_costs_the_next_job_nothing(
    handler_runs, monkeypatch, health_checks
):
    """With CONN_HEALTH_CHECKS (as this project's settings have) the next job gets a new
    connection before its first query; without them its run fails on the dead connection
    and is given back, and runs again at once, its attempt not counted."""
    monkeypatch.setitem(connections.settings["default"], "CONN_HEALTH_CHECKS", health_checks)
    queue = JobQueue()
    name = unique_queue("between")
    backends: list[int] = []
    calls: list = []

    def handler(job):
        calls.append(job.id)
        backends.append(backend_id())
        record_run(job)

    first = queue.enqueue(Job(queue_name=name))
    with running(worker_for(queue, name, handler)):
        wait_for_status(queue, name, "Completed", 1, 30)
        kill_backend(backends[0])
        second = queue.enqueue(Job(queue_name=name, max_attempts=1))
        wait_for_status(queue, name, "Completed", 2, 30)
    job = queue.get_job(second)
    assert (job.status, job.attempts, job.error_message) == (JobStatus.COMPLETED, 1, None)
    assert runs_per_job() == {first: 1, second: 1}
    assert backends[-1] != backends[0], "the dead connection was used again"
    if health_checks:
        assert calls.count(second) == 1, "the next job was handed the dead connection"
    else:
        assert calls.count(second) == 2


@server_only
def test_a_live_connection_passes_its_health_check_without_a_round_trip(handler_runs, monkeypatch):
    """Django's health check (`is_usable`: `SELECT 1`, a ping) runs only for a connection
    whose socket the server wrote to; the jobs of a live one make no such round trip."""
    monkeypatch.setitem(connections.settings["default"], "CONN_HEALTH_CHECKS", True)
    wrapper = type(connections["default"])
    checks: list[int] = []
    original = wrapper.is_usable

    def is_usable(self):
        checks.append(1)
        return original(self)

    monkeypatch.setattr(wrapper, "is_usable", is_usable)
    queue = JobQueue()
    name = unique_queue("live")
    ids = queue.enqueue_many([Job(queue_name=name) for _ in range(6)])
    backends: list[int] = []

    def handler(job):
        record_run(job)
        backends.append(backend_id())
        return {"backend": backends[-1]}

    with running(worker_for(queue, name, handler, batch_size=6, batch_concurrency=1)):
        wait_for_status(queue, name, "Completed", 6, 30)
    assert runs_per_job() == dict.fromkeys(ids, 1)
    assert len(set(backends)) == 1, "the connection was not kept from job to job"
    assert checks == []


@server_only
def test_a_connection_the_server_ended_fails_the_quiet_check(handler_runs):
    """The cheap check reads the socket: the server's goodbye (or the end of the stream)
    makes it readable, and Django's full check then finds the connection dead."""
    other = connections.create_connection("default")
    try:
        backend = backend_id(other)
        assert _quiet(other.connection)
        kill_backend(backend)
        wait_until(lambda: not _quiet(other.connection), 10, "the socket stayed quiet")
        assert not other.is_usable()
    finally:
        other.close()


@server_only
@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_run_the_database_dropped_is_given_back_and_runs_again_at_once(
    handler_runs, caplog, kind
):
    queue = JobQueue()
    name = unique_queue("dropped")
    job_id = queue.enqueue(Job(queue_name=name, max_attempts=1))
    backends: list[int] = []
    gate = threading.Event()

    def run(job):
        backends.append(backend_id())
        gate.wait(30)
        record_run(job)  # fails on the first run: its connection was killed meanwhile
        return {"run": len(backends)}

    async def run_async(job):
        return await sync_to_async(run)(job)

    handler = run if kind == "sync" else run_async
    with caplog.at_level("INFO", logger="workers"), running(worker_for(queue, name, handler)):
        wait_until(lambda: backends, 30, "the job did not start")
        kill_backend(backends[0])
        gate.set()
        wait_for_status(queue, name, "Completed", 1, 30)
    job = queue.get_job(job_id)
    # Its only attempt was not spent on the outage, and it ran again without a backoff.
    assert (job.attempts, job.error_message, job.result) == (1, None, {"run": 2})
    assert runs_per_job() == {job_id: 1}
    assert "the database went away under it" in caplog.text
    assert f"job {job_id} given back" in caplog.text


def test_a_database_error_on_a_working_connection_is_the_jobs_own(handler_runs):
    """SQLite and MySQL report an unknown column as an OperationalError, as they report a
    lost connection: the connection still answers, so the run failed for good."""
    queue = JobQueue()
    name = unique_queue("own_error")
    job_id = queue.enqueue(Job(queue_name=name, max_attempts=1))
    calls: list = []

    def handler(job):
        calls.append(job.id)
        with connection.cursor() as cursor:
            cursor.execute("SELECT no_such_column FROM queues_job")

    with running(worker_for(queue, name, handler)):
        wait_for_status(queue, name, "Dead", 1, 30)
    assert "no_such_column" in queue.get_job(job_id).error_message
    assert calls == [job_id]


@server_only
def test_a_handler_that_always_breaks_its_connection_is_not_given_back_for_ever(handler_runs):
    queue = JobQueue()
    name = unique_queue("breaks")
    job_id = queue.enqueue(Job(queue_name=name, max_attempts=1))
    calls: list = []

    def handler(job):
        calls.append(job.id)
        kill_backend(backend_id())  # the server ends the session under the query

    with running(worker_for(queue, name, handler)):
        wait_for_status(queue, name, "Dead", 1, 30)
    assert len(calls) == MAX_GIVEN_BACK + 1
    assert queue.get_job(job_id).attempts == 1


def test_async_handlers_that_use_the_orm_complete(handler_runs):
    queue = JobQueue()
    name = unique_queue("async_orm")
    ids = queue.enqueue_many([Job(queue_name=name) for _ in range(4)])

    async def handler(job):
        await asyncio.sleep(0)
        await sync_to_async(record_run)(job)

    with running(worker_for(queue, name, handler, batch_size=4, batch_concurrency=2)):
        wait_for_status(queue, name, "Completed", 4, 30)
    assert runs_per_job() == dict.fromkeys(ids, 1)
