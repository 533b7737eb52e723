"""A bulk operation (`queues.ops.bulk`) through the queue's store, on the database and in
memory alike: its row made, claimed, advanced a page per transaction, cancelled and taken
over; its filter (`reads.search.SearchFilter`) read by the store, as a query and as a test of
one row that agree."""

from __future__ import annotations

from datetime import timedelta

import pytest

from queues.api import Job, JobOutcome, JobPriority, JobStatus
from queues.models import BulkOperation
from queues.ops import bulk
from queues.reads.search import SearchFilter
from queues.store import Match
from tests.queues.conftest import unique_queue

Status = BulkOperation.Status


def dead_jobs(queue, name: str, n: int) -> list:
    ids = queue.enqueue_many([Job(queue_name=name, payload={"n": i}) for i in range(n)])
    for job_id in ids:
        queue.mark_job_dead(job_id, "boom")
    return ids


def dead_filter(name: str) -> SearchFilter:
    return SearchFilter.from_query({"queue": name, "status": JobStatus.DEAD})


def run_to_end(runner: bulk.BulkRunner) -> BulkOperation:
    while True:
        op = runner.run_once()
        if op is None or op.finished:
            return op


def test_a_retry_of_all_matching_runs_a_page_per_pass_to_the_end(queue):
    name = unique_queue("bulk_both")
    ids = dead_jobs(queue, name, 5)
    op = bulk.start(dead_filter(name), "retry", "ops", store=queue.store)
    assert (op.total, op.status) == (5, Status.PENDING)
    runner = bulk.BulkRunner(queue, batch_size=2, budget=timedelta(0), ran_by="r")

    first = runner.run_once()
    assert (first.pk, first.status, first.done, first.claimed_by) == (op.pk, "running", 2, "r")
    assert first.cursor and first.started_at == queue.now()
    done = run_to_end(runner)
    assert (done.status, done.done, done.skipped, done.gone) == (Status.COMPLETED, 5, 0, 0)
    assert done.finished_at is not None
    assert {queue.get_job(i).status for i in ids} == {JobStatus.PENDING}
    assert runner.run_once() is None


def test_a_delete_by_text_and_tag_across_queues(queue):
    a, b = unique_queue("bulk_both"), unique_queue("bulk_both")

    def order(q: str, text: str, **fields) -> Job:
        return Job(queue_name=q, payload={"order": text}, **fields)

    tagged = [order(q, f"X-{i}", tags=["eu"]) for q in (a, b) for i in "123"]
    queue.enqueue_many([*tagged, order(a, "Y", tags=["eu"]), order(b, "x-9")])
    flt = SearchFilter.from_query({"q": "x-", "tag": "eu"})
    assert bulk.start(flt, "delete", "ops", store=queue.store).total == 6
    assert run_to_end(bulk.BulkRunner(queue, batch_size=4)).done == 6
    left = [job for q in (a, b) for job in queue.store.find_jobs(Match(queue_name=q))]
    assert sorted(job.payload["order"] for job in left) == ["Y", "x-9"]


def test_a_cancel_stops_after_the_page_and_a_pending_one_at_once(queue):
    name = unique_queue("bulk_both")
    dead_jobs(queue, name, 6)
    bulk.start(dead_filter(name), "retry", "ops", store=queue.store)
    runner = bulk.BulkRunner(queue, batch_size=2, budget=timedelta(0))
    first = runner.run_once()
    assert (first.status, first.done) == ("running", 2)
    bulk.cancel(first, "ops", store=queue.store)
    stopped = runner.run_once()
    assert (stopped.status, stopped.done) == (Status.CANCELLED, 2)
    waiting = bulk.start(dead_filter(name), "retry", "ops", store=queue.store)
    bulk.cancel(waiting, "ops", store=queue.store)
    assert queue.store.get_bulk(waiting.pk).status == Status.CANCELLED
    assert runner.run_once() is None


def test_a_dead_runners_operation_is_taken_over_where_it_stopped(queue):
    name = unique_queue("bulk_both")
    dead_jobs(queue, name, 5)
    bulk.start(dead_filter(name), "delete", "ops", store=queue.store)
    gone = bulk.BulkRunner(queue, batch_size=2, budget=timedelta(0), ran_by="gone")
    assert gone.run_once().done == 2
    assert len(queue.store.find_jobs(Match(queue_name=name))) == 3
    other = bulk.BulkRunner(queue, batch_size=2, ran_by="other")
    assert other.run_once() is None  # its lease still holds
    queue.clock.advance(bulk.LEASE + timedelta(seconds=1))
    done = other.run_once()
    assert (done.status, done.done, done.claimed_by) == (Status.COMPLETED, 5, "other")
    assert queue.store.find_jobs(Match(queue_name=name)) == []
    assert gone.run_once() is None


def test_an_unexpected_error_fails_the_operation_with_its_message(queue, monkeypatch):
    name = unique_queue("bulk_both")
    dead_jobs(queue, name, 2)
    bulk.start(dead_filter(name), "retry", "ops", store=queue.store)

    def broken(*args, **kwargs):
        raise RuntimeError("handler broke")

    monkeypatch.setattr(bulk.acting, "act_on_page", broken)
    op = bulk.BulkRunner(queue).run_once()
    assert op.status == Status.FAILED and "broke" in op.error and op.finished_at


@pytest.fixture
def searched(queue):
    """Jobs that differ in every field a search reads: (the queue, {label: job})."""
    name = unique_queue("bulk_search")
    jobs = {
        "plain": Job(queue_name=name, payload={"order": "Plain-1"}),
        "tagged": Job(queue_name=name, payload={"note": "eu"}, tags=["eu", "vip"]),
        "high": Job(queue_name=name, priority=JobPriority.HIGH, payload={"order": "HIGH-2"}),
        "later": Job(queue_name=name, payload={"n": [1, 2]}),
    }
    queue.enqueue_many([jobs["plain"], jobs["tagged"], jobs["high"]])
    queue.clock.advance(timedelta(minutes=5))
    queue.enqueue(jobs["later"])
    queue.mark_job_dead(jobs["tagged"].id, "Database TIMEOUT at step 3")
    queue.finish_job_run(queue.dequeue_one(name), JobOutcome.completed())  # the high one
    queue.clock.advance(timedelta(minutes=5))
    return name, jobs


def test_a_search_as_a_query_and_as_a_test_of_one_row_agree(queue, searched):
    name, jobs = searched
    rows = queue.store.find_jobs(Match(queue_name=name))
    start = min(job.created_at for job in rows)
    split = (start + timedelta(minutes=1)).isoformat()
    expected = {
        (): set(jobs),
        (("status", "Dead"),): {"tagged"},
        (("priority", "3"),): {"high"},
        (("tag", "vip"),): {"tagged"},
        (("q", "plain-"),): {"plain"},
        (("q", "order"),): {"plain", "high"},
        (("error", "timeout"),): {"tagged"},
        (("created_from", split),): {"later"},
        (("created_to", split),): {"plain", "tagged", "high"},
        (("finished_from", start.isoformat()),): {"tagged", "high"},
        (("finished_to", split),): set(),
        (("id", str(jobs["later"].id)),): {"later"},
        (("priority", "9"),): set(),  # a problem: nothing
    }
    for params, labels in expected.items():
        flt = SearchFilter.from_query({"queue": name, **dict(params)})
        by_store = set(queue.store.select_ids(flt, among=[job.id for job in rows]))
        by_row = {job.id for job in rows if flt.matches(job)}
        assert by_store == by_row == {jobs[label].id for label in labels}, params
        assert queue.store.count_selected(flt) == len(labels), params
