"""The held jobs of a batch: those of a batch that is not fail-fast start on their claim's
checks, as jobs in no batch do; those of a fail-fast batch are read first (it may have
failed since the claim). The claimer reads each batch's mode once."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import OperationalError

from queues.api import Job, JobBatch, JobQueue, PartialFailureMode
from tests.conftest import unique_queue
from workers.api import Worker
from workers.runtime import WorkerRun, claimer, handoffs

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    monkeypatch.setattr(handoffs, "FRESH_START", 600.0)  # every held job is "just claimed"


def a_run(queue: JobQueue, name: str) -> WorkerRun:
    worker = Worker(queue, name, lambda job: None, batch_size=10, batch_concurrency=2)
    return WorkerRun(worker, threading.Event(), threading.Event())


def counted_reads(queue: JobQueue, monkeypatch) -> list[set]:
    reads: list[set] = []
    read = queue.fail_fast_batches

    def counting(ids):
        reads.append(set(ids))
        return read(ids)

    monkeypatch.setattr(queue, "fail_fast_batches", counting)
    return reads


def test_only_the_jobs_of_a_fail_fast_batch_wait_for_a_read(monkeypatch):
    queue = JobQueue()
    name = unique_queue("batch_starts")
    jobs = [Job(queue_name=name, payload={"i": i}) for i in range(3)]
    plain = queue.enqueue_batch(JobBatch("plain", jobs=jobs))
    jobs = [Job(queue_name=name, payload={"i": i}) for i in range(3)]
    fail_fast = queue.enqueue_batch(
        JobBatch("ff", jobs=jobs, partial_failure_mode=PartialFailureMode.FAIL_FAST)
    )
    alone = queue.enqueue(Job(queue_name=name))
    reads = counted_reads(queue, monkeypatch)
    run = a_run(queue, name)

    assert run.claimer.claim(4) == (4, 4)
    assert run.claimer.claim(3) == (3, 3)

    held = run.state.held
    assert {h.job.batch_id for h in held} == {plain, fail_fast, None}
    for h in held:
        assert h.fresh() is (h.job.batch_id != fail_fast), (h.job.id, h.job.batch_id)
    assert [h.job.id for h in held if h.job.batch_id is None] == [alone]
    assert set().union(*reads) == {plain, fail_fast}
    assert sum(map(len, reads)) == 2, f"a batch's mode read twice: {reads}"


def test_a_batch_whose_mode_cannot_be_read_waits_for_reads_of_its_own(monkeypatch):
    """The read is tried once, not retried: the claimed jobs wait for it. Its failure leaves
    the batch's jobs to reads of their own, and a later claim reads the mode again."""
    queue = JobQueue()
    name = unique_queue("batch_starts")
    jobs = [Job(queue_name=name) for _ in range(3)]
    batch_id = queue.enqueue_batch(JobBatch("plain", jobs=jobs))
    run = a_run(queue, name)
    read = queue.fail_fast_batches
    calls: list = []

    def gone_once(ids):
        calls.append(set(ids))
        if len(calls) == 1:
            raise OperationalError("server closed the connection unexpectedly")
        return read(ids)

    monkeypatch.setattr(queue, "fail_fast_batches", gone_once)
    assert run.claimer.claim(2) == (2, 2)
    assert [h.fresh() for h in run.state.held] == [False, False]
    assert run.claimer.fail_fast == {}, "an unread mode was kept"
    assert run.claimer.claim(1) == (1, 1)
    assert calls == [{batch_id}, {batch_id}]
    assert [h.fresh() for h in run.state.held] == [False, False, True]


def test_the_claims_start_window_opens_with_its_answer_not_after_the_read(monkeypatch):
    """A slow read of the modes must not widen the window in which held jobs start on the
    claim's checks: their claim time is the claim's."""
    queue = JobQueue()
    name = unique_queue("batch_starts")
    queue.enqueue_batch(JobBatch("plain", jobs=[Job(queue_name=name)]))
    queue.enqueue(Job(queue_name=name))
    run = a_run(queue, name)
    read = queue.fail_fast_batches
    began: list[float] = []

    def timed(ids):
        began.append(time.monotonic())
        return read(ids)

    monkeypatch.setattr(queue, "fail_fast_batches", timed)
    assert run.claimer.claim(2) == (2, 2)
    assert len(began) == 1
    assert all(h.claimed_at <= began[0] for h in run.state.held)


def test_a_claimer_forgets_the_modes_it_knows_past_its_bound(monkeypatch):
    monkeypatch.setattr(claimer, "MAX_BATCHES_KNOWN", 2)
    queue = JobQueue()
    name = unique_queue("batch_starts")
    batches = [
        queue.enqueue_batch(JobBatch(f"b{i}", jobs=[Job(queue_name=name)])) for i in range(3)
    ]
    run = a_run(queue, name)
    for _ in batches:
        assert run.claimer.claim(1) == (1, 1)
        assert len(run.claimer.fail_fast) <= 2
    assert all(h.fresh() for h in run.state.held), "a forgotten mode is read again"
