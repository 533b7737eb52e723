"""When a worker claims: once every held job has started, a batch that fills the free
capacity again, whether or not any job finishes."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest

from queues.api import Job, JobPriority, JobQueue
from tests.conftest import unique_queue
from tests.workers.support.helpers import running, wait_for_status, wait_until
from workers.api import Worker

pytestmark = pytest.mark.django_db(transaction=True)


def test_claims_again_when_the_last_held_job_starts():
    queue = JobQueue()
    name = unique_queue("refill")
    gate = threading.Event()
    # Four quick High jobs first, then jobs that wait at the gate: once the slots have taken
    # the last held job, the poller claims again, though the gated jobs never finish.
    queue.enqueue_many([Job(queue_name=name, priority=JobPriority.HIGH) for _ in range(4)])
    queue.enqueue_many([Job(queue_name=name, payload={"gated": True}) for _ in range(8)])

    def handler(job):
        if job.payload.get("gated"):
            gate.wait(30)

    worker = Worker(
        queue,
        name,
        handler,
        batch_size=4,
        batch_concurrency=2,
        poll_interval=timedelta(milliseconds=20),
    )
    try:
        with running(worker):
            # Two gated jobs running and more held. How many more depends on when the claim
            # came: it fills the batch as it stands then, and a High job may still be running.
            def refilled():
                return queue.get_job_counts_by_status(name)["Running"] >= 3

            wait_until(refilled, 10, "no claim after the slots took the last held job")
            gate.set()
            wait_for_status(queue, name, "Completed", 12, 30)
    finally:
        gate.set()
