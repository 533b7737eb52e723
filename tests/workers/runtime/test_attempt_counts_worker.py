"""Real workers fill the history's failure and retry counters (queues.store.counters.attempt_counts)
from what their handlers raise: handlers that write with the ORM and then fail, several workers
(threads, each its own connection) at once, counted exactly as the error history's rows."""

from __future__ import annotations

from datetime import timedelta

import pytest

from hammerweb.measure.models import BenchNote
from queues.api import Job, JobQueue, JobStatus, RetryStrategy
from tests.conftest import unique_queue
from tests.queues.store.counters.test_attempt_counts import counted, from_history
from tests.workers.support.helpers import running, wait_for_status
from workers.api import Worker

pytestmark = pytest.mark.django_db(transaction=True)
FAST = timedelta(milliseconds=20)
JOBS = 30


class InvoiceRejected(Exception):
    pass


def send_invoice(job):
    # A user's handler: it records its try in its own table, then the upstream says no.
    BenchNote.objects.create(job_id=job.id, n=job.attempts)
    tries = BenchNote.objects.filter(job_id=job.id).count()
    raise InvoiceRejected(f"invoice {job.payload['i']} rejected (try {tries})")


def test_workers_failures_and_retries_are_counted_exactly():
    queue = JobQueue()
    name = unique_queue("ac_worker")
    again_at_once = RetryStrategy.fixed(timedelta(0))
    ids = queue.enqueue_many(
        Job(queue_name=name, payload={"i": i}, max_attempts=2, retry_strategy=again_at_once)
        for i in range(JOBS)
    )
    workers = [Worker(queue, name, send_invoice, poll_interval=FAST) for _ in range(3)]
    with running(*workers):
        wait_for_status(queue, name, JobStatus.DEAD, JOBS, 60)
    exact = from_history([name])
    assert counted([name], queue.now()) == exact
    assert [sum(kind) for kind in zip(*exact.values(), strict=True)] == [JOBS, JOBS]
    assert BenchNote.objects.filter(job_id__in=ids).count() == 2 * JOBS, "the handlers' writes"
