"""The archive through `JobQueue` on the database and in memory: which jobs move, in bounded
transactions, with their history; what a restore puts back; the counts on the way."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import IntegrityError

from queues.api import Job, JobBatch, JobGroup, JobOutcome, JobStatus
from queues.exceptions import InvalidJob
from queues.models import ArchivedJob
from queues.options import DequeueOptions
from queues.store import Match
from queues.store.archived import PLAIN, ZLIB, pack, unpack
from tests.queues.conftest import unique_queue
from tests.queues.support.jobs_helpers import finished

WEEK = timedelta(days=7)


def _row_of(queue, job_id):
    return queue.store.get_archived(job_id)


def test_old_finished_jobs_move_with_their_history_and_come_back_as_they_were(queue):
    name = unique_queue("archive")
    done = finished(queue, name, 2)
    failed = finished(queue, name, 1, JobOutcome.dead("it broke: ünïcødé ☃"))
    before = {job_id: queue.get_job(job_id) for job_id in [*done, *failed]}
    history = queue.get_job_attempts(failed[0])
    assert len(history) == 1
    queue.clock.advance(WEEK + timedelta(seconds=1))
    recent = finished(queue, name, 1)
    pending = queue.enqueue(Job(queue_name=name))

    assert queue.archive_jobs(WEEK) == 3
    assert all(queue.get_job(job_id) is None for job_id in [*done, *failed])
    assert queue.get_job(recent[0]) is not None and queue.get_job(pending) is not None
    counts = queue.get_job_counts_by_status(name)
    assert (counts["Completed"], counts["Dead"], counts["Pending"]) == (1, 0, 1)

    archived = queue.get_archived_job(failed[0])
    assert archived.job.status == JobStatus.DEAD
    assert archived.job.error_message == "it broke: ünïcødé ☃"
    assert [a.error for a in archived.attempts] == [history[0].error]
    assert archived.archived_at == queue.now()
    assert queue.get_archived_job(pending) is None

    assert queue.restore([*failed, done[0]]) == sorted([failed[0], done[0]], key=str)
    for job_id in (failed[0], done[0]):
        back = queue.get_job(job_id)
        for field in Job._meta.concrete_fields:
            assert getattr(back, field.attname) == getattr(before[job_id], field.attname), field
        assert queue.get_archived_job(job_id) is None
    assert [a.error for a in queue.get_job_attempts(failed[0])] == [history[0].error]
    counts = queue.get_job_counts_by_status(name)
    assert (counts["Completed"], counts["Dead"], counts["Pending"]) == (2, 1, 1)
    assert queue.restore([failed[0]]) == []  # not archived (any more): nothing


def test_a_limit_moves_at_most_that_many_a_batch_at_a_time(queue):
    name = unique_queue("archive_limit")
    finished(queue, name, 7)
    queue.clock.advance(WEEK * 2)
    totals = []
    assert queue.archive_jobs(WEEK, limit=5, batch_size=2, progress=totals.append) == 5
    assert totals == [2, 4, 5]
    assert queue.get_job_counts_by_status(name)["Completed"] == 2
    assert queue.archive_jobs(WEEK, queue_name=name) == 2
    assert queue.archive_jobs(WEEK, queue_name=name) == 0  # again: nothing left, no error


def test_jobs_not_eligible_stay(queue):
    name = unique_queue("archive_keep")
    queue.clock.advance(-WEEK * 2)
    running = queue.enqueue(Job(queue_name=name))
    queue.dequeue(name)
    recurring = queue.enqueue(Job(queue_name=name, cron_schedule="0 0 * * * *"))
    # A finished parent whose dependent still waits; a finished job of an open batch.
    first, second = Job(queue_name=name), Job(queue_name=name)
    queue.enqueue_workflow(JobGroup("wf").add_job(first).then(second))
    parent, child = first.id, second.id
    later = Job(queue_name=name, scheduled_at=queue.now() + WEEK * 10)
    batch = queue.enqueue_batch(JobBatch("b", jobs=[Job(queue_name=name), later]))
    runs = queue.dequeue(name, DequeueOptions(batch_size=10))
    queue.finish_job_runs(
        [(r, JobOutcome.completed()) for r in runs if r.id not in (running, recurring)]
    )
    batch_jobs = queue.get_batch_jobs(batch)
    assert {j.status for j in batch_jobs} == {"Completed", "Pending"}  # the batch is open
    queue.clock.advance(WEEK * 2)
    other = unique_queue("archive_other")
    finished_elsewhere = finished(queue, other, 1)
    queue.clock.advance(WEEK * 2)

    assert queue.archive_jobs(WEEK, queue_name=name) == 0
    assert queue.get_job(parent) is not None and queue.get_job(child) is not None
    assert all(queue.get_job(j.id) is not None for j in batch_jobs)
    assert queue.get_archived_job(finished_elsewhere[0]) is None


def test_a_finished_workflow_is_archived_with_its_edges_and_restored_with_them(queue):
    name = unique_queue("archive_flow")
    first, second = Job(queue_name=name), Job(queue_name=name)
    flow = queue.enqueue_workflow(JobGroup("wf").add_job(first).then(second))
    parent, child = first.id, second.id
    for _ in range(2):
        runs = queue.dequeue(name)
        queue.finish_job_runs([(r, JobOutcome.completed()) for r in runs])
    queue.clock.advance(WEEK * 2)
    assert queue.archive_jobs(WEEK) >= 2
    assert queue.get_archived_job(child).job.workflow_id == flow
    assert queue.store.dependents([parent]) == set()
    assert queue.restore([child, parent]) == sorted([child, parent], key=str)
    assert queue.store.dependents([parent]) == {child}
    assert queue.get_job(child).workflow_id == flow


@pytest.mark.parametrize(
    "payload, result",
    [
        ({}, None),
        ({"text": "ünïcødé ☃ 🐍", "n": [1, 2.5, None, True]}, "done ✓"),
        ({"big": "x" * 200_000}, {"rows": list(range(5000))}),
    ],
)
def test_payload_and_result_round_trip(queue, payload, result):
    name = unique_queue("archive_payload")
    queue.enqueue(Job(queue_name=name, payload=payload, meta={"k": "v"}))
    run = queue.dequeue_one(name)
    queue.finish_job_run(run, JobOutcome.completed(result))
    queue.clock.advance(WEEK * 2)
    assert queue.archive_jobs(WEEK, queue_name=name) == 1
    archived = queue.get_archived_job(run.id)
    assert (archived.job.payload, archived.job.result, archived.job.meta) == (
        payload,
        result,
        {"k": "v"},
    )
    queue.restore([run.id])
    back = queue.get_job(run.id)
    assert (back.payload, back.result) == (payload, result)


def test_a_large_payload_is_compressed_and_a_small_one_is_not(queue):
    name = unique_queue("archive_packed")
    big = queue.enqueue(Job(queue_name=name, payload={"big": "abc" * 100_000}))
    small = queue.enqueue(Job(queue_name=name, payload={}))
    runs = queue.dequeue(name, DequeueOptions(batch_size=2))
    queue.finish_job_runs([(r, JobOutcome.completed()) for r in runs])
    queue.clock.advance(WEEK * 2)
    queue.archive_jobs(WEEK, queue_name=name)
    big_row = bytes(_row_of(queue, big).data)
    assert big_row[:1] == ZLIB and len(big_row) < 300_000 // 10
    assert bytes(_row_of(queue, small).data)[:1] in (PLAIN, ZLIB)
    assert pack({"a": 1})[:1] == PLAIN and unpack(pack({"a": 1})) == {"a": 1}


def test_bad_arguments_are_refused_and_change_nothing(queue):
    with pytest.raises(ValueError):
        queue.archive_jobs(WEEK, limit=0)
    with pytest.raises(ValueError):
        queue.archive_jobs(WEEK, batch_size=True)
    with pytest.raises(ValueError):
        queue.archive_jobs("7d")
    with pytest.raises(InvalidJob):
        queue.restore(["not-an-id"])
    with pytest.raises(InvalidJob):
        queue.get_archived_job("nope")


def test_archived_row_has_its_searchable_columns(queue):
    name = unique_queue("archive_cols")
    queue.enqueue(Job(queue_name=name, tags=["red"], unique_key="k1"))
    run = queue.dequeue_one(name)
    queue.finish_job_run(run, JobOutcome.completed())
    queue.clock.advance(WEEK * 2)
    queue.archive_jobs(WEEK, queue_name=name)
    row: ArchivedJob = _row_of(queue, run.id)
    assert (row.queue_name, row.status, row.tags, row.unique_key) == (
        name,
        "Completed",
        ["red"],
        "k1",
    )
    assert row.finished_at == run.started_at or row.finished_at >= row.created_at
    assert not queue.store.find_jobs(Match(queue_name=name))


def _done_with_key(queue, name, key):
    job_id = queue.enqueue(Job(queue_name=name, unique_key=key))
    (run,) = queue.dequeue(name, DequeueOptions.batch(1))
    queue.finish_job_run(run, JobOutcome.completed())
    return job_id


def test_two_archived_jobs_of_one_unique_key_restore_together_one_keeping_it(queue):
    """Each held the key in its time: restored at once, one of them holds it again."""
    name = unique_queue("archive_keys")
    first = _done_with_key(queue, name, "k")
    queue.clock.advance(WEEK + timedelta(seconds=1))
    assert queue.archive_jobs(WEEK) == 1
    second = _done_with_key(queue, name, "k")
    queue.clock.advance(WEEK + timedelta(seconds=1))
    assert queue.archive_jobs(WEEK) == 1
    assert sorted(queue.restore([first, second]), key=str) == sorted([first, second], key=str)
    slots = [queue.get_job(job_id).unique_slot for job_id in (first, second)]
    assert sorted(slot is None for slot in slots) == [False, True], slots


def test_a_restore_that_met_a_key_taken_meanwhile_is_tried_again(queue, monkeypatch):
    name = unique_queue("archive_race")
    [done] = finished(queue, name, 1)
    queue.clock.advance(WEEK + timedelta(seconds=1))
    queue.archive_jobs(WEEK)
    restore = queue.store.restore_archived
    tries = []

    def raced(ids):  # the first try meets an enqueue's key (its insert refused)
        tries.append(ids)
        if len(tries) == 1:
            raise IntegrityError("a unique slot is taken")
        return restore(ids)

    monkeypatch.setattr(queue.store, "restore_archived", raced)
    assert queue.restore([done]) == [done] and len(tries) == 2
    assert queue.get_job(done).status == JobStatus.COMPLETED


def test_a_job_that_still_holds_its_unique_key_stays_until_it_does_not(queue):
    """Archived, it would free its key; the run goes past it, however many such jobs come
    first (more than a batch here)."""
    name = unique_queue("archive_held")
    held = [
        queue.enqueue(Job(queue_name=name, unique_key=f"s{i}", unique_statuses=["Completed"]))
        for i in range(3)
    ]
    period = queue.enqueue(Job(queue_name=name, unique_key="p", unique_period=timedelta(days=30)))
    plain = [queue.enqueue(Job(queue_name=name, unique_key=f"k{i}")) for i in range(2)]
    for run in queue.dequeue(name, DequeueOptions.batch(10)):
        queue.finish_job_run(run, JobOutcome.completed())
    queue.clock.advance(WEEK + timedelta(seconds=1))

    assert queue.archive_jobs(WEEK, batch_size=2) == 2
    assert all(queue.get_archived_job(job_id) for job_id in plain)
    assert all(queue.get_job(job_id) is not None for job_id in [*held, period])
    duplicate = queue.enqueue_unique(
        Job(queue_name=name, unique_key="s0", unique_statuses=["Completed"])
    )
    assert not duplicate.created and duplicate.id == held[0]

    queue.clock.advance(timedelta(days=30))  # the period is over; the statuses still hold
    assert queue.archive_jobs(WEEK, batch_size=2) == 1
    assert queue.get_archived_job(period) is not None
    assert all(queue.get_job(job_id) is not None for job_id in held)
