"""Cancelling a running job reaches its handler: the worker learns within about a second
(`cancel_check_interval`) that the run is no longer its own; an async handler's task is
cancelled, a sync handler sees `job.cancel_requested()` and returns, one that ignores it runs
on to its timeout. Nothing the handler returns is written (the run is fenced out); the
history row of the cancel says how the handler ended, and the slot runs the next job as soon
as the handler is back. On the database of the run and on TestQueue."""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import timedelta

import pytest

from queues.api import Job, JobQueue, JobStatus, TestQueue
from queues.engine.history import this_process
from tests.conftest import unique_queue
from tests.workers.support.handler_runs import record_run, runs_per_job
from tests.workers.support.helpers import running, wait_for_status, wait_until
from workers.api import Worker

pytestmark = pytest.mark.django_db(transaction=True)
FAST = timedelta(milliseconds=20)
#: How long a cancel may take to reach a handler here: the worker checks every 200 ms; the
#: rest is room for a loaded machine.
REACHES_WITHIN = 5.0
REASON = "Cancelled by alice in the dashboard: the customer withdrew"


@pytest.fixture(params=["db", "memory"])
def queue(request, handler_runs):
    return JobQueue() if request.param == "db" else TestQueue()


class Probe:
    """What a handler tells the test: that it started, and how it ended."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.ended = threading.Event()
        self.how: str | None = None

    def end(self, how: str) -> None:
        self.how = how
        self.ended.set()


def start_worker(queue, name, handler, **settings):
    settings.setdefault("cancel_check_interval", timedelta(milliseconds=200))
    return Worker(queue, name, handler, poll_interval=FAST, **settings)


def cancel_when_started(queue, job_id, probe: Probe) -> float:
    assert probe.started.wait(30), "the handler did not start"
    queue.cancel_job(job_id, reason=REASON)
    return time.monotonic()


def assert_cancelled(queue, job_id, handler_end: str) -> None:
    """The job as the cancel left it, and the one history row: the cancel's, with how the
    handler ended noted by the worker."""
    job = queue.get_job(job_id)
    assert (job.status, job.error_message, job.result) == (JobStatus.FAILED, REASON, None)
    assert job.attempts == 1 and job.completed_at is None and job.timed_out_at is None
    wait_until(
        lambda: queue.get_job_attempts(job_id)[0].handler_end is not None,
        REACHES_WITHIN,
        "the worker did not note how the handler ended",
    )
    (row,) = queue.get_job_attempts(job_id)
    assert (row.ended_by, row.status, row.error) == ("cancelled", "Failed", REASON)
    assert row.handler_end == handler_end and row.worker == this_process()
    assert row.handler_ended_at >= row.failed_at


def test_an_async_handler_is_cancelled_mid_await_and_its_slot_runs_the_next_job(queue):
    name = unique_queue("cancel_async")
    probe = Probe()

    async def handler(job):
        if job.payload.get("next"):
            return {"next": "ran"}
        probe.started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            probe.end("cancelled")
            raise
        probe.end("slept")

    job_id = queue.enqueue(Job(queue_name=name))
    with running(start_worker(queue, name, handler)):
        asked = cancel_when_started(queue, job_id, probe)
        assert probe.ended.wait(REACHES_WITHIN) and probe.how == "cancelled"
        took = time.monotonic() - asked
        nxt = queue.enqueue(Job(queue_name=name, payload={"next": True}))
        wait_for_status(queue, name, JobStatus.COMPLETED, 1, 10)
    assert took < REACHES_WITHIN
    assert queue.get_job(nxt).result == {"next": "ran"}, "the slot was free again"
    assert_cancelled(queue, job_id, "stopped")


def test_a_sync_handler_that_polls_the_request_stops(queue):
    name = unique_queue("cancel_poll")
    probe = Probe()

    def handler(job):
        record_run(job)
        probe.started.set()
        deadline = time.monotonic() + 60
        while not job.cancel_requested() and time.monotonic() < deadline:
            time.sleep(0.01)
        probe.end("asked" if job.cancel_requested() else "ran out")
        return {"stopped": True}

    job_id = queue.enqueue(Job(queue_name=name, timeout=timedelta(seconds=60)))
    with running(start_worker(queue, name, handler)):
        cancel_when_started(queue, job_id, probe)
        assert probe.ended.wait(REACHES_WITHIN) and probe.how == "asked"
        assert_cancelled(queue, job_id, "stopped")
    assert runs_per_job() == {job_id: 1}


def test_a_handler_that_ignores_the_request_is_cut_off_at_its_timeout(queue):
    name = unique_queue("cancel_ignored")
    probe = Probe()
    release = threading.Event()

    nexts = []

    def handler(job):
        if job.payload.get("next"):
            nexts.append(job.id)
            return "next ran"
        probe.started.set()
        release.wait(30)  # ignores the request, and its timeout
        probe.end("returned")
        return {"late": "result"}

    job_id = queue.enqueue(Job(queue_name=name, timeout=timedelta(seconds=1)))
    worker = start_worker(queue, name, handler, shutdown_grace_period=timedelta(seconds=20))
    with running(worker):
        asked = cancel_when_started(queue, job_id, probe)
        assert_cancelled(queue, job_id, "cut_off")
        assert time.monotonic() - asked >= 0.5, "noted before its timeout"
        # Its thread still runs: the slot waits for it (as for any handler past its
        # timeout), then runs the next job.
        nxt = queue.enqueue(Job(queue_name=name, payload={"next": True}))
        time.sleep(0.3)
        assert nexts == [], "a slot ran another job while its handler's thread ran"
        release.set()
        wait_for_status(queue, name, JobStatus.COMPLETED, 1, 10)
        assert nexts == [nxt]
    assert probe.how == "returned"
    assert_cancelled(queue, job_id, "cut_off")  # its late result wrote nothing


def test_an_async_handler_that_swallows_the_cancel_is_cut_off_at_its_timeout(queue):
    name = unique_queue("cancel_swallowed")
    probe = Probe()

    async def handler(job):
        probe.started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            await asyncio.sleep(30)  # carries on regardless, until the timeout cancels it
        return "never"

    job_id = queue.enqueue(Job(queue_name=name, timeout=timedelta(seconds=1)))
    with running(start_worker(queue, name, handler)):
        cancel_when_started(queue, job_id, probe)
        assert_cancelled(queue, job_id, "cut_off")


def test_a_late_outcome_writes_nothing(queue):
    """A sync handler without a timeout that ignores the request and completes: its run
    was fenced out, so its result, completion and attempts are not written."""
    name = unique_queue("cancel_fenced")
    probe = Probe()
    release = threading.Event()
    handed = []

    def handler(job):
        record_run(job)
        handed.append(job)
        probe.started.set()
        release.wait(30)
        return {"late": "result"}

    job_id = queue.enqueue(Job(queue_name=name))
    with running(start_worker(queue, name, handler)):
        cancel_when_started(queue, job_id, probe)
        # The worker flags the job it handed the handler, which returns only then.
        wait_until(lambda: handed[0].cancel_requested(), REACHES_WITHIN, "not asked to stop")
        release.set()
        assert_cancelled(queue, job_id, "stopped")
    assert runs_per_job() == {job_id: 1}
    assert queue.get_job_counts_by_status(name)["Failed"] == 1


def test_a_run_retried_while_running_is_stopped_and_runs_again(queue):
    name = unique_queue("cancel_retried")
    probe = Probe()
    runs = []

    def handler(job):
        runs.append(job.attempts)
        if len(runs) == 1:
            probe.started.set()
            while not job.cancel_requested():
                time.sleep(0.01)
            return "first run, stopped"
        return "second run"

    job_id = queue.enqueue(Job(queue_name=name, timeout=timedelta(seconds=30)))
    with running(start_worker(queue, name, handler)):
        assert probe.started.wait(30)
        queue.retry_job(job_id)
        wait_for_status(queue, name, JobStatus.COMPLETED, 1, 10)
    job = queue.get_job(job_id)
    assert (job.result, runs) == ("second run", [1, 2])
    (row,) = queue.get_job_attempts(job_id)
    assert (row.ended_by, row.handler_end, row.attempt) == ("retried", "stopped", 1)
