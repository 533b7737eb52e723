"""Limits under real concurrency: threads, each with a connection of its own (or one shared
`TestQueue`), claim a limited queue at once; the claims take turns on the queue's config
row, so together they never hold more than the limit."""

from __future__ import annotations

import threading
import time

import pytest

from queues.api import DequeueOptions, Job, JobOutcome, JobQueue, JobStatus, TestQueue
from tests.queues.conftest import unique_queue
from tests.queues.engine.test_concurrency import in_threads

pytestmark = pytest.mark.django_db(transaction=True)  # the memory variant needs none
THREADS = 8
LIMIT = 3


@pytest.fixture(params=["db", "memory"])
def make_queue(request):
    """A queue per thread on the database (each its own connection), or one TestQueue."""
    if request.param == "db":
        yield JobQueue
    else:
        shared = TestQueue()
        yield lambda: shared


def _limited(queue, jobs: int) -> str:
    name = unique_queue("race_limit")
    queue.enqueue_many([Job(queue_name=name, payload={"n": i}) for i in range(jobs)])
    queue.queue_config(name, max_running=LIMIT)
    return name


def test_threads_claiming_at_once_get_the_limit_between_them(make_queue):
    name = _limited(make_queue(), 30)
    got: list[int] = []

    def claim() -> None:
        got.append(len(make_queue().dequeue(name, DequeueOptions.batch(10))))

    in_threads([claim] * THREADS)
    assert sum(got) == LIMIT, got
    assert make_queue().get_job_counts_by_status(name)[JobStatus.RUNNING] == LIMIT


def test_threads_working_a_limited_queue_never_hold_more_than_the_limit(make_queue):
    jobs = 40
    name = _limited(make_queue(), jobs)
    holding = 0
    most = 0
    lock = threading.Lock()
    deadline = time.monotonic() + 120

    def work() -> None:
        nonlocal holding, most
        queue = make_queue()
        while time.monotonic() < deadline:
            claimed = queue.dequeue(name, DequeueOptions.batch(2))
            # Counted after the claim committed and before the completions: never more
            # than the database's Running jobs at that moment.
            with lock:
                holding += len(claimed)
                most = max(most, holding)
            if claimed:
                time.sleep(0.005)
            with lock:
                holding -= len(claimed)
            for job in claimed:
                queue.finish_job_run(job, JobOutcome.completed())
            counts = queue.get_job_counts_by_status(name)
            if counts[JobStatus.COMPLETED] == jobs:
                return
            if not claimed:
                time.sleep(0.002)

    in_threads([work] * THREADS)
    assert make_queue().get_job_counts_by_status(name)[JobStatus.COMPLETED] == jobs
    assert 1 <= most <= LIMIT, most
