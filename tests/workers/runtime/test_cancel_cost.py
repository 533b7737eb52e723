"""What the cancel checks cost a busy worker: one read per check interval while handlers run,
whatever the number of jobs, and nothing per job or per claim."""

from __future__ import annotations

import time
from collections import Counter
from datetime import timedelta

import pytest

from queues.api import Job, JobQueue, JobStatus, TestQueue
from tests.conftest import unique_queue
from tests.queues.support.recording import Recording
from tests.workers.support.helpers import running, wait_for_status
from workers.api import Worker

pytestmark = pytest.mark.django_db(transaction=True)
JOBS = 600
CHECK = timedelta(milliseconds=200)


@pytest.mark.parametrize("make_queue", [JobQueue, TestQueue], ids=["db", "memory"])
def test_the_checks_are_a_read_per_interval_not_per_job(make_queue):
    queue = make_queue()
    name = unique_queue("check_cost")
    queue.enqueue_many([Job(queue_name=name) for _ in range(JOBS)])
    queue._store = recording = Recording(queue.store)

    def handler(job):
        time.sleep(0.005)
        return None

    worker = Worker(
        queue,
        name,
        handler,
        batch_size=50,
        batch_concurrency=10,
        poll_interval=timedelta(milliseconds=20),
        cancel_check_interval=CHECK,
    )
    began = time.monotonic()
    with running(worker):
        wait_for_status(queue, name, JobStatus.COMPLETED, JOBS, 60)
        took = time.monotonic() - began
    calls = Counter(recording.calls)
    assert calls["running_tokens"] <= took / CHECK.total_seconds() + 2, (calls, took)
    if took > 3 * CHECK.total_seconds():
        assert calls["running_tokens"] >= 1, "it never checked while its handlers ran"
    assert calls["update_attempt"] == calls["insert_attempts"] == 0
