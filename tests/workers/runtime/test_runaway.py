"""A sync handler that runs past its timeout is recorded TimedOut at once; if its thread has
not come back within the grace period too, the worker stops claiming, drains, and its run
ends with `RunawayHandler` (`runworker` then exits 1, and its supervisor starts a fresh
process)."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest

from queues.api import Job, JobQueue, JobStatus
from tests.conftest import unique_queue
from tests.workers.support.helpers import RunningWorker, wait_for_status, wait_until
from workers.api import RunawayHandler, Worker

pytestmark = pytest.mark.django_db(transaction=True)
ms = lambda n: timedelta(milliseconds=n)  # noqa: E731


def timing_out(queue, name, handler, grace: timedelta, **settings) -> Worker:
    """A worker whose jobs time out after 200 ms, with `grace` for their threads."""
    return Worker(
        queue,
        name,
        handler,
        poll_interval=ms(20),
        default_timeout=ms(200),
        shutdown_grace_period=grace,
        **settings,
    )


def test_a_handler_thread_that_does_not_come_back_ends_the_run(caplog):
    queue = JobQueue()
    name = unique_queue("runaway")
    release = threading.Event()
    stuck = queue.enqueue(Job(queue_name=name, max_attempts=1, payload={"stuck": True}))
    rest = queue.enqueue_many([Job(queue_name=name) for _ in range(3)])

    def handler(job):
        if job.payload.get("stuck"):
            release.wait(60)  # ignores its timeout

    worker = timing_out(queue, name, handler, ms(500))
    try:
        with caplog.at_level("ERROR", logger="workers"):
            run = RunningWorker(worker)
            began = time.monotonic()
            run.thread.join(30)
            took = time.monotonic() - began
            assert not run.thread.is_alive(), "the run did not end"
        assert isinstance(run.error, RunawayHandler), run.error
        assert took >= 0.7, "the run ended before the grace period had passed"
        assert f"job {stuck} of {name}: its handler is still running" in caplog.text
        assert f"(thread job-{stuck})" in caplog.text  # the thread, named for its job
        # The timed-out run was recorded at its timeout; nothing else started meanwhile,
        # and what the run had claimed went back unstarted.
        assert queue.get_job(stuck).status == JobStatus.TIMED_OUT
        for job_id in rest:
            job = queue.get_job(job_id)
            assert (job.status, job.attempts) == (JobStatus.PENDING, 0)
    finally:
        release.set()


def test_a_handler_thread_that_comes_back_within_the_grace_period_frees_its_slot():
    queue = JobQueue()
    name = unique_queue("late")
    late = queue.enqueue(Job(queue_name=name, max_attempts=1, payload={"late": True}))
    others = queue.enqueue_many([Job(queue_name=name) for _ in range(3)])
    running_at_once = []
    lock = threading.Lock()
    state = {"active": 0}

    def handler(job):
        with lock:
            state["active"] += 1
            running_at_once.append(state["active"])
        try:
            if job.payload.get("late"):
                time.sleep(0.5)  # past its 200 ms timeout, back within the grace period
        finally:
            with lock:
                state["active"] -= 1

    worker = timing_out(
        queue, name, handler, timedelta(seconds=5), batch_size=1, batch_concurrency=1
    )
    run = RunningWorker(worker)
    try:
        wait_for_status(queue, name, "Completed", 3, 30)
        wait_until(lambda: queue.get_job(late).status == JobStatus.TIMED_OUT, 10, "not recorded")
    finally:
        run.shutdown()
    # One slot: the late thread held it until it came back, so no two handlers overlapped.
    assert max(running_at_once) == 1
    assert all(queue.get_job(job_id).attempts == 1 for job_id in others)
