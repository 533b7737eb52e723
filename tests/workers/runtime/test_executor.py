"""How handler calls end: results, errors, async handlers, timeouts, missing handlers."""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from queues.api import Job, JobQueue, JobStatus, RetryStrategy, TestQueue
from tests.conftest import unique_queue
from tests.pgbouncer.pooling import skip_through_a_pooler
from tests.workers.support.helpers import running, wait_for_status, wait_until
from workers.api import Worker, dispatch, job_handler
from workers.registry import unregister

pytestmark = pytest.mark.django_db(transaction=True)
FAST = timedelta(milliseconds=20)


def run_until(queue, queue_name, status, count, handler, **settings):
    worker = Worker(queue, queue_name, handler, poll_interval=FAST, **settings)
    with running(worker):
        wait_for_status(queue, queue_name, status, count, 30)
    return worker


def test_return_value_is_the_result_and_async_handlers_run():
    queue = JobQueue()
    name = unique_queue("async")
    ids = queue.enqueue_many([Job(queue_name=name, payload={"n": n}) for n in range(6)])
    threads = set()

    async def handler(job):
        await asyncio.sleep(0.01)
        threads.add(threading.current_thread().name)
        return {"double": job.payload["n"] * 2}

    worker = run_until(queue, name, "Completed", 6, handler, batch_size=6, batch_concurrency=3)
    assert sorted(queue.get_job(i).result["double"] for i in ids) == [0, 2, 4, 6, 8, 10]
    assert threads == {"worker-event-loop"}, "async handlers run on the worker's event loop"
    assert worker.stats.snapshot()["completed"] == 6


def test_an_exception_is_a_failed_run_retried_with_the_engines_backoff():
    queue = JobQueue()
    name = unique_queue("fails")
    strategy = RetryStrategy.fixed(timedelta(hours=1))
    job_id = queue.enqueue(Job(queue_name=name, retry_strategy=strategy, max_attempts=3))

    def handler(job):
        raise ValueError("boom")

    before = timezone.now()
    worker = Worker(queue, name, handler, poll_interval=FAST)
    with running(worker):
        wait_until(
            lambda: (
                queue.get_job(job_id).attempts == 1
                and queue.get_job(job_id).status == JobStatus.PENDING
            ),
            30,
            "the failed run was not recorded",
        )
    job = queue.get_job(job_id)
    assert job.error_message == "ValueError: boom"
    assert job.attempts == 1
    assert job.scheduled_at >= before + timedelta(minutes=59)


def test_last_attempt_failing_is_dead():
    queue = JobQueue()
    name = unique_queue("dead")
    job_id = queue.enqueue(Job(queue_name=name, max_attempts=1))
    run_until(queue, name, "Dead", 1, lambda job: 1 / 0)
    assert queue.get_job(job_id).error_message == "ZeroDivisionError: division by zero"


def test_a_result_that_is_not_json_fails_the_run():
    queue = JobQueue()
    name = unique_queue("badresult")
    job_id = queue.enqueue(Job(queue_name=name, max_attempts=1))
    run_until(queue, name, "Dead", 1, lambda job: object())
    assert "not JSON-serialisable" in queue.get_job(job_id).error_message


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_job_past_its_timeout_times_out(kind):
    queue = JobQueue()
    name = unique_queue("timeout")
    job_id = queue.enqueue(
        Job(queue_name=name, max_attempts=1, timeout=timedelta(milliseconds=200))
    )
    release = threading.Event()
    cancelled = threading.Event()

    def blocking(job):
        release.wait(30)

    async def sleeping(job):
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    try:
        run_until(queue, name, "TimedOut", 1, blocking if kind == "sync" else sleeping)
    finally:
        release.set()
    job = queue.get_job(job_id)
    assert job.error_message.startswith("Job timed out")
    assert job.timed_out_at is not None
    if kind == "async":
        assert cancelled.wait(5), "the timed-out coroutine was not cancelled"


def test_the_workers_default_timeout_applies_to_jobs_without_one():
    queue = JobQueue()
    name = unique_queue("default_timeout")
    queue.enqueue(Job(queue_name=name, max_attempts=1))
    release = threading.Event()
    try:
        run_until(
            queue,
            name,
            "TimedOut",
            1,
            lambda job: release.wait(30),
            default_timeout=timedelta(milliseconds=200),
        )
    finally:
        release.set()


def test_a_queue_without_a_handler_fails_its_jobs_with_a_clear_error():
    queue = JobQueue()
    name = unique_queue("nohandler")
    job_id = queue.enqueue(Job(queue_name=name, max_attempts=1))
    run_until(queue, name, "Dead", 1, dispatch)
    assert queue.get_job(job_id).error_message == f"no handler is registered for queue {name}"


def test_dispatch_runs_the_registered_handler():
    queue = JobQueue()
    name = unique_queue("registered")
    job_id = queue.enqueue(Job(queue_name=name, payload={"x": 2}))
    job_handler(name)(lambda job: job.payload["x"] + 1)
    try:
        run_until(queue, name, "Completed", 1, dispatch)
    finally:
        unregister(name)
    assert queue.get_job(job_id).result == 3


def test_burst_mode_returns_once_the_queue_is_empty():
    queue = JobQueue()
    name = unique_queue("burst")
    queue.enqueue_many([Job(queue_name=name) for _ in range(5)])
    worker = Worker(queue, name, lambda job: None, poll_interval=FAST, batch_size=2, burst=True)
    done = threading.Event()
    thread = threading.Thread(target=lambda: (worker.run(), done.set()))
    thread.start()
    thread.join(30)
    assert done.is_set()
    assert queue.get_job_counts_by_status(name)["Completed"] == 5


@pytest.mark.skipif(connection.vendor != "postgresql", reason="counts server connections")
def test_worker_threads_close_their_connections():
    skip_through_a_pooler()
    queue = JobQueue()
    name = unique_queue("connections")
    queue.enqueue_many([Job(queue_name=name) for _ in range(12)])

    async def async_handler(job):
        return None

    run_until(queue, name, "Completed", 12, lambda job: None, batch_size=4, batch_concurrency=3)
    queue.enqueue_many([Job(queue_name=name) for _ in range(12)])
    run_until(queue, name, "Completed", 24, async_handler, batch_size=4, batch_concurrency=3)
    # Handlers with a timeout run in their slots' handler threads, which close theirs too.
    queue.enqueue_many([Job(queue_name=name, timeout=timedelta(seconds=30)) for _ in range(12)])
    run_until(
        queue,
        name,
        "Completed",
        36,
        lambda job: JobQueue().get_job(job.id).attempts,
        batch_size=4,
        batch_concurrency=3,
    )
    # A closed connection's server process exits a moment after the client hangs up, so
    # the count is read until it settles; a leaked connection stays open for good.
    deadline = time.monotonic() + 10
    while True:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            )
            open_connections = cursor.fetchone()[0]
        if open_connections == 1 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert open_connections == 1, "a worker thread left its connection open"


def test_a_worker_runs_on_a_test_queue_too():
    queue = TestQueue()
    name = unique_queue("memory")
    ids = queue.enqueue_many([Job(queue_name=name, payload={"n": n}) for n in range(6)])
    run_until(queue, name, "Completed", 6, lambda job: job.payload["n"], batch_size=4)
    assert [queue.get_job(i).result for i in ids] == list(range(6))
