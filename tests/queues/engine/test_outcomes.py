"""Outcomes of a run, each in one transaction: completion, retries with backoff, Dead,
time-outs, explicit retries and recurring jobs rescheduled in place."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from queues.api import (
    CANCELLED,
    LOST,
    RELEASED,
    STARTED,
    DequeueOptions,
    Job,
    JobBatch,
    JobOutcome,
    JobStatus,
    PartialFailureMode,
    RetryStrategy,
)
from queues.engine.outcomes import check_outcome, stored_result
from queues.validation import StoredJSON
from tests.queues.conftest import unique_queue


def claim(queue, queue_name):
    jobs = queue.dequeue(queue_name, DequeueOptions.batch(1))
    assert len(jobs) == 1
    return jobs[0]


def test_completed_stores_the_result(queue):
    name = unique_queue("done")
    job_id = queue.enqueue(Job(queue_name=name, payload={"n": 1}))
    run = claim(queue, name)
    recorded = queue.finish_job_run(run, JobOutcome.completed({"sum": 3}))
    assert recorded.status == JobStatus.COMPLETED
    stored = queue.get_job(job_id)
    assert stored.status == JobStatus.COMPLETED
    assert stored.result == {"sum": 3}
    assert stored.completed_at == queue.clock.now()
    assert stored.lease_expires_at is None


def test_a_result_is_encoded_once_by_its_check_and_stored_as_its_value(queue):
    """The check of a completion keeps the JSON text it made; the write stores that text
    (not a second encoding), and the job's result is the value, not the text."""
    name = unique_queue("text")
    job_id = queue.enqueue(Job(queue_name=name))
    run = claim(queue, name)
    value = {"é": [1, 2.5, None], "n": "x"}
    outcome = JobOutcome.completed(value)
    check_outcome(outcome)
    text = stored_result(outcome)
    assert isinstance(text, StoredJSON) and json.loads(text) == value
    check_outcome(outcome)
    assert stored_result(outcome) is text, "checked twice, encoded twice"
    (recorded,), _, _ = queue.write_runs([(run, outcome)], [])
    assert recorded.status == JobStatus.COMPLETED
    stored = queue.get_job(job_id)
    assert stored.result == value and isinstance(stored.result, dict)
    assert run.result is value


def test_failures_back_off_until_attempts_run_out_then_dead(queue):
    name = unique_queue("flaky")
    job_id = queue.enqueue(
        Job(
            queue_name=name,
            payload={},
            max_attempts=3,
            retry_strategy=RetryStrategy.fixed(timedelta(seconds=30)),
        )
    )
    for attempt in (1, 2):
        run = claim(queue, name)
        assert run.attempts == attempt
        recorded = queue.finish_job_run(run, JobOutcome.failed(f"boom {attempt}"))
        assert recorded.status == JobStatus.PENDING
        stored = queue.get_job(job_id)
        assert stored.scheduled_at == queue.clock.now() + timedelta(seconds=30)
        assert stored.error_message == f"boom {attempt}"
        assert queue.dequeue(name) == [], "claimed before its backoff ran out"
        queue.clock.advance(timedelta(seconds=30))
    run = claim(queue, name)
    recorded = queue.finish_job_run(run, JobOutcome.failed("boom 3"))
    assert recorded.status == JobStatus.DEAD
    stored = queue.get_job(job_id)
    assert (stored.status, stored.attempts, stored.error_message) == (JobStatus.DEAD, 3, "boom 3")
    assert stored.failed_at is not None


def test_default_backoff_grows_exponentially(queue):
    name = unique_queue("default_backoff")
    job_id = queue.enqueue(Job(queue_name=name, payload={}, max_attempts=5))
    delays = []
    for _ in range(3):
        run = claim(queue, name)
        queue.finish_job_run(run, JobOutcome.failed("x"))
        delay = queue.get_job(job_id).scheduled_at - queue.clock.now()
        delays.append(delay.total_seconds())
        queue.clock.advance(delay)
    # 10 s, 20 s, 40 s, each +/-10 %.
    for delay, expected in zip(delays, (10, 20, 40), strict=True):
        assert expected * 0.9 <= delay <= expected * 1.1


def test_timeouts_retry_then_end_timed_out(queue):
    name = unique_queue("slow")
    job_id = queue.enqueue(
        Job(queue_name=name, payload={}, max_attempts=2, timeout=timedelta(seconds=5))
    )
    run = claim(queue, name)
    assert queue.finish_job_run(run, JobOutcome.timed_out("took too long")).status == "Pending"
    assert queue.get_job(job_id).timed_out_at is not None
    queue.clock.advance(timedelta(hours=1))
    run = claim(queue, name)
    recorded = queue.finish_job_run(run, JobOutcome.timed_out("took too long"))
    assert recorded.status == JobStatus.TIMED_OUT
    assert queue.get_job(job_id).status == JobStatus.TIMED_OUT


def test_dead_and_explicit_retry(queue):
    name = unique_queue("explicit")
    first = queue.enqueue(Job(queue_name=name, payload={}, max_attempts=5))
    run = claim(queue, name)
    at = queue.clock.now() + timedelta(minutes=7)
    assert queue.finish_job_run(run, JobOutcome.retry(at, "later")).status == JobStatus.PENDING
    assert queue.get_job(first).scheduled_at == at
    queue.clock.advance(timedelta(minutes=7))
    run = claim(queue, name)
    assert queue.finish_job_run(run, JobOutcome.dead("poison")).status == JobStatus.DEAD
    assert queue.get_job(first).attempts == 2


def test_recurring_job_is_rescheduled_in_place(queue):
    name = unique_queue("cron")
    job = Job(queue_name=name, payload={}, cron_schedule="0 0 * * * *")
    job_id = queue.enqueue(job)
    stored = queue.get_job(job_id)
    assert stored.recurring and stored.scheduled_at == stored.next_run_at
    assert stored.next_run_at > queue.clock.now()
    assert queue.dequeue(name) == [], "ran before its first occurrence"
    queue.clock.set(stored.next_run_at)
    run = claim(queue, name)
    recorded = queue.finish_job_run(run, JobOutcome.completed())
    assert recorded.status == JobStatus.PENDING
    assert recorded.next_run_at == stored.next_run_at + timedelta(hours=1)
    again = queue.get_job(job_id)
    assert (again.status, again.attempts, again.next_run_at, again.scheduled_at) == (
        JobStatus.PENDING,
        0,
        recorded.next_run_at,
        recorded.next_run_at,
    )
    # A failed last attempt does not end a recurring job: it runs at the next slot.
    queue.clock.set(recorded.next_run_at)
    run = claim(queue, name)
    run.max_attempts = run.attempts  # this is the last attempt
    failed = queue.finish_job_run(run, JobOutcome.dead("bad run"))
    assert failed.status == JobStatus.PENDING
    assert failed.next_run_at == recorded.next_run_at + timedelta(hours=1)
    assert queue.get_job(job_id).error_message == "bad run"


def test_a_result_that_is_not_json_is_refused_and_changes_nothing(queue):
    name = unique_queue("bad_result")
    job_id = queue.enqueue(Job(queue_name=name, payload={}))
    run = claim(queue, name)
    with pytest.raises(ValueError):
        queue.finish_job_run(run, JobOutcome.completed(object()))
    assert queue.get_job(job_id).status == JobStatus.RUNNING


def test_finish_job_runs_records_many_at_once(queue):
    name = unique_queue("many")
    parent = Job(queue_name=name, payload={"parent": True})
    child = Job(queue_name=name, payload={"child": True}).depends_on_job(parent)
    plain = [Job(queue_name=name, payload={"i": i}, max_attempts=1) for i in range(4)]
    queue.enqueue_many([parent, child, *plain])
    runs = {job.id: job for job in queue.dequeue(name, DequeueOptions.batch(10))}
    assert set(runs) == {parent.id, *(job.id for job in plain)}
    stale = runs[plain[3].id]
    assert queue.release_job_run(stale)

    recorded = queue.finish_job_runs(
        [
            (runs[parent.id], JobOutcome.completed()),
            (runs[plain[0].id], JobOutcome.completed()),
            (runs[plain[1].id], JobOutcome.completed({"kept": 1})),
            (runs[plain[2].id], JobOutcome.failed("no")),
            (stale, JobOutcome.completed()),
        ]
    )
    assert [r and r.status for r in recorded] == [
        "Completed",
        "Completed",
        "Completed",
        "Dead",
        None,
    ]
    assert recorded[0].unblocked == [child.id]
    assert queue.get_job(plain[1].id).result == {"kept": 1}
    assert queue.get_job(plain[3].id).status == JobStatus.PENDING, "a stale run wrote"
    assert {job.id for job in queue.dequeue(name, DequeueOptions.batch(10))} == {
        child.id,
        plain[3].id,
    }
    assert queue.finish_job_runs([]) == []


# One write between two jobs (what a batch worker's slot hands in) ---------------------------
def test_finish_and_start_runs_ends_one_job_and_starts_the_next_at_once(queue):
    name = unique_queue("handover")
    queue.enqueue_many([Job(queue_name=name, payload={"i": i}) for i in range(4)])
    first, second, third, lost = queue.dequeue(name, DequeueOptions.batch(4))
    assert queue.release_job_run(lost)
    queue.clock.advance(timedelta(seconds=3))

    recorded, answers = queue.finish_and_start_runs(
        [(first, JobOutcome.completed()), (second, JobOutcome.failed("no"))], [third, lost]
    )
    assert [r.status for r in recorded] == [JobStatus.COMPLETED, JobStatus.PENDING]
    assert answers == [STARTED, LOST]
    stored = queue.get_job(third.id)
    # The next job starts when the previous one ended: its wait is not counted as its run.
    assert stored.started_at == queue.get_job(first.id).completed_at == queue.now()
    assert third.started_at == stored.started_at, "the caller's job took the start time"
    assert queue.get_job(lost.id).started_at is None, "a lost run was written"
    assert queue.finish_and_start_runs([], []) == ([], [])


def test_finish_and_start_runs_releases_in_a_paused_queue(queue):
    name = unique_queue("handover_paused")
    queue.enqueue_many([Job(queue_name=name) for _ in range(2)])
    first, second = queue.dequeue(name, DequeueOptions.batch(2))
    queue.pause_queue(name)
    recorded, answers = queue.finish_and_start_runs([(first, JobOutcome.completed())], [second])
    assert recorded[0].status == JobStatus.COMPLETED and answers == [RELEASED]
    held = queue.get_job(second.id)
    assert (held.status, held.attempts, held.started_at) == (JobStatus.PENDING, 0, None)


def test_finish_and_start_runs_cancels_the_next_job_of_a_batch_the_first_failed(queue):
    name = unique_queue("handover_failfast")
    jobs = [Job(queue_name=name, max_attempts=1) for _ in range(3)]
    batch_id = queue.enqueue_batch(JobBatch("b", jobs, PartialFailureMode.FAIL_FAST))
    first, second = queue.dequeue(name, DequeueOptions.batch(2))
    recorded, answers = queue.finish_and_start_runs([(first, JobOutcome.failed("boom"))], [second])
    assert recorded[0].status == JobStatus.DEAD and answers == [CANCELLED]
    cancelled = queue.get_job(second.id)
    assert cancelled.status == JobStatus.FAILED
    assert cancelled.error_message == f"Batch failed: job {first.id} failed (fail-fast mode)"
    assert queue.get_batch_status(batch_id).failed_jobs == 3
