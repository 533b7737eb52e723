"""A `Worker` on a limited queue (in memory and on the database): it says once that it waits
at the limit (not at every poll), and in burst mode a queue at its limit is not empty."""

from __future__ import annotations

import logging
import time
from datetime import timedelta

import pytest

from queues.api import DequeueOptions, Job, JobOutcome, JobQueue, JobStatus, TestQueue
from queues.store.base import Match
from tests.conftest import unique_queue
from tests.workers.support.helpers import RunningWorker, wait_for_status, wait_until
from workers.api import Worker
from workers.runtime import claimer

pytestmark = pytest.mark.django_db(transaction=True)  # the memory variant needs none
POLL = timedelta(milliseconds=10)


@pytest.fixture(params=["db", "memory"])
def queue(request):
    if request.param == "db":
        return JobQueue()
    return TestQueue()


def _held_at_limit(queue, jobs: int = 4) -> tuple[str, Job]:
    """A queue limited to one, whose one place another claim holds."""
    name = unique_queue("worker_limit")
    queue.enqueue_many([Job(queue_name=name, payload={"n": i}) for i in range(jobs)])
    queue.queue_config(name, max_running=1)
    (held,) = queue.dequeue(name, DequeueOptions.batch(5))
    return name, held


def _worker(queue, name: str, **options) -> Worker:
    return Worker(
        queue,
        name,
        lambda job: {"ok": True},
        poll_interval=POLL,
        batch_size=5,
        batch_concurrency=5,
        **options,
    )


def test_a_worker_says_once_that_it_waits_at_the_limit(queue, caplog):
    name, held = _held_at_limit(queue)
    caplog.set_level(logging.INFO, logger="workers")
    run = RunningWorker(_worker(queue, name))
    try:
        time.sleep(0.3)  # some 30 polls at the limit
        lines = [r.getMessage() for r in caplog.records if "at its limit" in r.getMessage()]
        assert lines == [
            f"queue {name} is at its limit of 1 running jobs (every worker's): waiting for one "
            "to end"
        ]
        queue.finish_job_run(held, JobOutcome.completed())
        wait_for_status(queue, name, JobStatus.COMPLETED, 4, 30)
    finally:
        run.shutdown()


def test_a_worker_still_at_the_limit_says_so_once_a_minute(queue, caplog, monkeypatch):
    monkeypatch.setattr(claimer, "LIMIT_LOG_EVERY", 0.1)
    name, held = _held_at_limit(queue)
    caplog.set_level(logging.INFO, logger="workers")
    run = RunningWorker(_worker(queue, name))
    try:
        wait_until(
            lambda: any("still at its limit" in r.getMessage() for r in caplog.records),
            30,
            "no reminder",
        )
    finally:
        run.shutdown()
    queue.finish_job_run(held, JobOutcome.completed())
    again = [r.getMessage() for r in caplog.records if "still at its limit" in r.getMessage()]
    assert again[0].startswith(f"queue {name}: still at its limit of 1 running jobs (")


def test_a_burst_worker_waits_at_the_limit_instead_of_stopping(queue):
    name, held = _held_at_limit(queue)
    run = RunningWorker(_worker(queue, name, burst=True))
    time.sleep(0.3)
    assert run.thread.is_alive(), "a queue at its limit is not empty"
    assert queue.get_job_counts_by_status(name)[JobStatus.PENDING] == 3
    queue.finish_job_run(held, JobOutcome.completed())
    run.join(30)  # it ends by itself once the queue is empty
    assert queue.get_job_counts_by_status(name)[JobStatus.COMPLETED] == 4


def test_on_a_limited_queue_a_worker_claims_no_more_than_its_free_slots(queue):
    """A claimed job waiting for a slot counts against the limit: a worker of one slot and a
    batch of five holds one job at a time, leaving the rest of the limit to others. (A job
    whose handler has returned may still be Running until the writer records its outcome,
    while the slot runs the next: it waits for no slot, and it still counts against the
    limit, so it is told apart here by the handlers' own record.)"""
    name = unique_queue("worker_slots")
    queue.enqueue_many([Job(queue_name=name, payload={"n": i}) for i in range(6)])
    queue.queue_config(name, max_running=3)
    seen: list[int] = []
    returned: set = set()

    def handler(job):
        running = {
            found.id
            for found in queue.store.find_jobs(Match(queue_name=name))
            if found.status == JobStatus.RUNNING
        }
        seen.append(len(running - returned))
        returned.add(job.id)  # the last thing before it returns
        return {"ok": True}

    worker = Worker(queue, name, handler, poll_interval=POLL, batch_size=5, batch_concurrency=1)
    run = RunningWorker(worker)
    try:
        wait_for_status(queue, name, JobStatus.COMPLETED, 6, 30)
    finally:
        run.shutdown()
    assert seen == [1] * 6
