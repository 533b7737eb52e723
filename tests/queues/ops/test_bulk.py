"""The background "all matching" operation (`queues.ops.bulk`): a page of ids per transaction
through the engine, the filter asked again of the locked rows, progress and cursor moved in
the page's transaction, a cancel, a takeover after a dead runner's lease, a failure kept."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from queues.api import Job, JobQueue, JobStatus
from queues.models import BulkOperation
from queues.ops import bulk
from queues.reads.search import SearchFilter
from tests.conftest import unique_queue

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def engine():
    yield JobQueue()
    connection.close()


def dead_jobs(engine: JobQueue, queue: str, n: int, **fields) -> list:
    ids = engine.enqueue_many([Job(queue_name=queue, payload={"n": i}, **fields) for i in range(n)])
    for job_id in ids:
        engine.mark_job_dead(job_id, "boom")
    return ids


def dead_filter(queue: str) -> SearchFilter:
    return SearchFilter.from_query({"queue": queue, "status": JobStatus.DEAD})


class Transactions:
    """Counts the engine's outermost transactions (a nested atomic is a savepoint)."""

    def __init__(self, engine: JobQueue, monkeypatch):
        self.count = 0
        atomic = engine.store.atomic

        def counted(fn, **kwargs):
            if not connection.in_atomic_block:
                self.count += 1
            return atomic(fn, **kwargs)

        monkeypatch.setattr(engine.store, "atomic", counted)


def run_to_end(runner: bulk.BulkRunner) -> BulkOperation:  # each pass ends at its budget
    while True:
        op = runner.run_once()
        if op is None or op.finished:
            return op


def test_2500_matching_jobs_in_pages_of_1000_are_3_transactions(engine, monkeypatch):
    # A delete: one `delete_jobs` per page (a retry or cancel calls the engine per job, a
    # savepoint each, in the same page transaction; tested on fewer jobs below).
    queue = unique_queue("bulk")
    ids = engine.enqueue_many([Job(queue_name=queue, payload={"n": i}) for i in range(2500)])
    keep = engine.enqueue(Job(queue_name=queue, payload={"keep": True}))
    engine.mark_job_dead(keep, "not Pending")
    flt = SearchFilter.from_query({"queue": queue, "status": JobStatus.PENDING})
    op = bulk.start(flt, "delete", "ops")
    assert (op.total, op.status) == (2500, "pending")
    transactions = Transactions(engine, monkeypatch)
    runner = bulk.BulkRunner(engine, batch_size=1000, budget=timedelta(minutes=10))
    done = runner.run_once()
    assert transactions.count == 3
    assert (done.status, done.done, done.skipped, done.total) == ("completed", 2500, 0, 2500)
    assert done.started_at and done.finished_at and done.claimed_by
    assert not any(engine.get_job(i) for i in ids[::100]) and engine.get_job(keep)


def test_retry_and_cancel_are_the_engines_per_job_in_one_transaction_a_page(engine, monkeypatch):
    queue = unique_queue("bulk")
    ids = dead_jobs(engine, queue, 5)
    bulk.start(dead_filter(queue), "retry", "ops")
    transactions = Transactions(engine, monkeypatch)
    done = run_to_end(bulk.BulkRunner(engine, batch_size=2))
    assert (done.done, transactions.count) == (5, 3)
    assert {engine.get_job(i).status for i in ids} == {JobStatus.PENDING}
    op = bulk.start(SearchFilter.from_query({"queue": queue}), "cancel", "ops")
    assert run_to_end(bulk.BulkRunner(engine)).done == 5
    assert "Cancelled by ops" in engine.get_job(ids[0]).error_message
    assert f"bulk operation {op.pk}" in engine.get_job(ids[0]).error_message


@pytest.mark.parametrize("action", ["retry", "delete", "cancel"])
def test_a_job_that_stops_matching_between_count_and_action_is_untouched(engine, action):
    queue = unique_queue("bulk")
    if action == "cancel":
        ids = engine.enqueue_many([Job(queue_name=queue) for _ in range(5)])
        flt = SearchFilter.from_query({"queue": queue, "status": JobStatus.PENDING})
        moved = ids[2]
        engine.mark_job_dead(moved, "meanwhile")  # no longer Pending
        expect_moved = JobStatus.DEAD
    else:
        ids = dead_jobs(engine, queue, 5)
        flt = dead_filter(queue)
        moved = ids[2]
        expect_moved = JobStatus.PENDING
    op = bulk.start(flt, action, "ops")
    assert op.total == (5 if action != "cancel" else 4)
    if action != "cancel":
        engine.retry_job(moved)  # Pending now: the filter (Dead) no longer holds it
    # The ids are read before, the rows checked after they are locked: give the runner
    # the stale page by reading it before the change, as a runner in the middle would.
    done = run_to_end(bulk.BulkRunner(engine, batch_size=2))
    assert done.status == "completed"
    job = engine.get_job(moved)
    assert job is not None and job.status == expect_moved
    others = [i for i in ids if i != moved]
    if action == "delete":
        assert all(engine.get_job(i) is None for i in others)
    elif action == "retry":
        assert {engine.get_job(i).status for i in others} == {JobStatus.PENDING}
    else:
        assert {engine.get_job(i).status for i in others} == {JobStatus.FAILED}
    assert done.done == 4


def test_the_locked_rows_are_asked_again(engine):
    """Between the read of a page's ids and their lock, a job is retried: it is skipped."""
    queue = unique_queue("bulk")
    ids = dead_jobs(engine, queue, 3)
    op = bulk.start(dead_filter(queue), "delete", "ops")
    runner = bulk.BulkRunner(engine, batch_size=10)
    real_pages = bulk.pages

    def pages_then_change(rows, size):
        for page in real_pages(rows, size):
            engine.retry_job(ids[0])  # after its id was read, before the page is locked
            yield page

    bulk.pages = pages_then_change
    try:
        done = runner.run_once()
    finally:
        bulk.pages = real_pages
    assert (done.done, done.skipped) == (2, 1)
    assert engine.get_job(ids[0]).status == JobStatus.PENDING
    assert op.pk == done.pk


def test_a_cancel_stops_after_the_page_and_a_pending_one_at_once(engine):
    queue = unique_queue("bulk")
    dead_jobs(engine, queue, 6)
    op = bulk.start(dead_filter(queue), "retry", "ops")
    runner = bulk.BulkRunner(engine, batch_size=2, budget=timedelta(0))
    first = runner.run_once()
    assert (first.status, first.done) == ("running", 2)
    bulk.cancel(first, "ops")
    stopped = runner.run_once()
    assert (stopped.status, stopped.done) == ("cancelled", 2)
    assert engine.get_job(stopped.cursor) is not None
    waiting = bulk.start(dead_filter(queue), "retry", "ops")
    bulk.cancel(waiting, "ops")
    waiting.refresh_from_db()
    assert waiting.status == "cancelled" and runner.run_once() is None
    assert op.pk == first.pk


def test_a_dead_runners_operation_is_taken_over_where_it_stopped(engine):
    queue = unique_queue("bulk")
    dead_jobs(engine, queue, 5)
    bulk.start(dead_filter(queue), "delete", "ops")
    gone = bulk.BulkRunner(engine, batch_size=2, budget=timedelta(0), ran_by="gone")
    op = gone.run_once()
    assert (op.done, op.status) == (2, "running")
    other = bulk.BulkRunner(engine, batch_size=2, ran_by="other")
    assert other.run_once() is None  # its lease still holds
    BulkOperation.objects.filter(pk=op.pk).update(
        lease_expires_at=timezone.now() - timedelta(seconds=1)
    )
    done = other.run_once()
    assert (done.status, done.done, done.claimed_by) == ("completed", 5, "other")
    assert gone.run_once() is None


def test_an_unexpected_error_fails_the_operation_with_its_message(engine, monkeypatch):
    queue = unique_queue("bulk")
    dead_jobs(engine, queue, 2)
    bulk.start(dead_filter(queue), "retry", "ops")

    def broken(*args, **kwargs):
        raise RuntimeError("handler <b>broke</b>")

    monkeypatch.setattr(bulk.acting, "act_on_page", broken)
    op = bulk.BulkRunner(engine).run_once()
    assert op.status == "failed" and "broke" in op.error and op.finished_at


def test_a_filter_with_text_and_a_tag_across_queues(engine):
    a, b = unique_queue("bulk"), unique_queue("bulk")
    engine.enqueue_many(
        [
            Job(queue_name=q, payload={"order": f"X-{i}"}, tags=["eu"])
            for q in (a, b)
            for i in range(3)
        ]
        + [Job(queue_name=a, payload={"order": "Y"}, tags=["eu"])]
    )
    flt = SearchFilter.from_query({"q": "x-", "tag": "eu"})
    op = bulk.start(flt, "delete", "ops")
    assert op.total >= 6
    done = run_to_end(bulk.BulkRunner(engine, batch_size=4))
    assert done.done >= 6
    assert [j.payload for j in engine.store.find_jobs(engine_match(a))] == [{"order": "Y"}]


def engine_match(queue: str):
    from queues.store import Match

    return Match(queue_name=queue)
