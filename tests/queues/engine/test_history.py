"""The error history: every failed attempt keeps a row (what ended it, when, which worker,
the error, the exception's class and traceback), written by the write that ended it."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest

from queues.api import (
    DequeueOptions,
    Job,
    JobBatch,
    JobOutcome,
    JobStatus,
    PartialFailureMode,
    RetryStrategy,
)
from queues.engine.history import this_process
from queues.enums import AttemptEnd
from queues.ops.maintenance import Lifeline
from queues.store import Match
from queues.text import MAX_TRACEBACK
from tests.queues.conftest import unique_queue

LEASE = timedelta(seconds=60)
TRACE = 'Traceback (most recent call last):\n  File "jobs.py", line 3\nValueError: boom\n'


def claim(queue, name, n=1, process=None):
    options = DequeueOptions.batch(n).with_lease_duration(LEASE)
    jobs = queue.dequeue(name, options, claimed_by=process)
    assert len(jobs) == n
    return jobs


def ended(queue, job_id) -> list[tuple]:
    return [(a.attempt, a.ended_by, a.status) for a in queue.get_job_attempts(job_id)]


def test_each_failed_attempt_keeps_its_error_traceback_class_time_and_worker(queue):
    name = unique_queue("history")
    strategy = RetryStrategy.fixed(timedelta(seconds=5))
    job_id = queue.enqueue(Job(queue_name=name, max_attempts=2, retry_strategy=strategy))
    process = uuid.uuid4()
    (run,) = claim(queue, name, process=process)
    first_at = queue.now()
    failed = JobOutcome.failed("ValueError: boom", traceback=TRACE, exception_class="x.Boom")
    queue.finish_job_run(run, failed)
    queue.clock.advance(timedelta(seconds=6))
    (run,) = claim(queue, name, process=process)
    queue.finish_job_run(run, JobOutcome.failed("KeyError: 'k'"))

    first, second = queue.get_job_attempts(job_id)
    assert (first.attempt, first.ended_by, first.status) == (1, AttemptEnd.ERROR, "Pending")
    assert (first.error, first.traceback, first.exception_class) == (
        "ValueError: boom",
        TRACE,
        "x.Boom",
    )
    assert first.failed_at == first_at
    assert (first.worker, first.worker_process) == (this_process(), process)
    assert first.run_token is not None and first.run_token != second.run_token
    assert (second.attempt, second.status, second.error) == (2, JobStatus.DEAD, "KeyError: 'k'")
    assert second.traceback is None and second.exception_class is None
    assert queue.get_job(job_id).error_message == "KeyError: 'k'", "the job keeps the last"


def test_completions_and_retries_without_an_error_write_no_history(queue):
    name = unique_queue("history_none")
    done, snoozed, retried, timed_out = queue.enqueue_many(
        [Job(queue_name=name, max_attempts=1) for _ in range(4)]
    )
    runs = {job.id: job for job in claim(queue, name, 4)}
    queue.finish_job_runs(
        [
            (runs[done], JobOutcome.completed({"ok": 1})),
            (runs[snoozed], JobOutcome.retry(queue.now())),
            (runs[retried], JobOutcome.retry(queue.now(), "rate limited")),
            (runs[timed_out], JobOutcome.timed_out("Job timed out after 2s")),
        ]
    )
    assert ended(queue, done) == [] and ended(queue, snoozed) == []
    assert ended(queue, retried) == [(1, AttemptEnd.ERROR, "Pending")]
    assert ended(queue, timed_out) == [(1, AttemptEnd.TIMEOUT, "TimedOut")]


def test_a_stale_runs_failure_writes_no_history(queue):
    name = unique_queue("history_stale")
    job_id = queue.enqueue(Job(queue_name=name))
    (run,) = claim(queue, name)
    assert queue.release_job_run(run)
    assert queue.finish_job_run(run, JobOutcome.failed("late")) is None
    assert queue.get_job_attempts(job_id) == []


def test_the_reapers_and_the_lifelines_rescues_are_in_the_history(queue):
    name = unique_queue("history_rescue")
    reaped, died = queue.enqueue_many([Job(queue_name=name), Job(queue_name=name)])
    process = uuid.uuid4()
    claim(queue, name, 2, process=process)
    queue.clock.advance(LEASE / 2)
    # The lifeline hands back the process's jobs; one of them is another process's now.
    queue.store.update_jobs(Match(ids=[reaped]), {"claimed_by": uuid.uuid4()})
    Lifeline(queue, ran_by="supervisor:h:1").hand_back(process, "The worker process h:7 died")
    queue.clock.advance(LEASE)
    queue.requeue_stale_jobs(ran_by="test")

    (rescue,) = queue.get_job_attempts(reaped)
    assert (rescue.ended_by, rescue.status, rescue.attempt) == ("lease_expired", "Pending", 1)
    assert "lease expired" in rescue.error
    assert rescue.worker is None, "the reaper is not the process that ran it"
    (death,) = queue.get_job_attempts(died)
    assert (death.ended_by, death.error) == ("process_died", "The worker process h:7 died")
    assert (death.worker, death.worker_process) == (None, process)


def test_operators_actions_that_end_a_run_are_in_the_history(queue):
    name = unique_queue("history_operators")
    cancelled, dead, retried = queue.enqueue_many([Job(queue_name=name) for _ in range(3)])
    runs = {job.id: job for job in claim(queue, name, 3)}
    pending = queue.enqueue(Job(queue_name=name))
    queue.cancel_job(cancelled, reason="Cancelled by alice in the dashboard: not needed")
    queue.mark_job_dead(dead)
    queue.retry_job(retried)
    queue.cancel_job(pending)

    (row,) = queue.get_job_attempts(cancelled)
    assert (row.ended_by, row.status, row.attempt) == ("cancelled", "Failed", 1)
    assert row.error == "Cancelled by alice in the dashboard: not needed"
    assert row.run_token == runs[cancelled].run_token, "its worker finds its row by its run"
    assert ended(queue, dead) == [(1, "marked_dead", "Dead")]
    assert ended(queue, retried) == [(1, "retried", "Pending")]
    assert queue.get_job_attempts(pending) == [], "no attempt ended"


def test_a_fail_fast_batchs_cancelled_start_is_in_the_history(queue):
    name = unique_queue("history_batch")
    first, second = Job(queue_name=name, max_attempts=1), Job(queue_name=name, max_attempts=1)
    queue.enqueue_batch(JobBatch("b", [first, second], PartialFailureMode.FAIL_FAST))
    a, b = claim(queue, name, 2)
    queue.finish_job_run(a, JobOutcome.failed("boom"))
    queue.start_claimed_run(b)
    (row,) = queue.get_job_attempts(b.id)
    assert (row.ended_by, row.status) == ("cancelled", "Failed")
    assert row.error.startswith("Batch failed")


def test_history_text_is_cleaned_and_cut_to_its_limits(queue):
    name = unique_queue("history_text")
    job_id = queue.enqueue(Job(queue_name=name, max_attempts=1))
    (run,) = claim(queue, name)
    trace = "Traceback\x00 (most recent call last):\n\ud800" + "  frame\n" * 10_000 + "ValueError"
    outcome = JobOutcome.failed("bad\x00text", traceback=trace, exception_class="x" * 300)
    queue.finish_job_run(run, outcome)
    (row,) = queue.get_job_attempts(job_id)
    assert row.error == "bad\ufffdtext"
    assert len(row.traceback) <= MAX_TRACEBACK
    assert row.traceback.startswith("Traceback\ufffd (most recent call last):\n\ufffd")
    assert row.traceback.endswith("ValueError") and "characters cut" in row.traceback
    assert row.exception_class == "x" * 255


def test_a_tasks_traceback_is_kept_once(queue):
    name = unique_queue("history_task")
    job_id = queue.enqueue(Job(queue_name=name, max_attempts=1))
    (run,) = claim(queue, name)
    error = f"builtins.ValueError: boom\n\n{TRACE}"
    queue.finish_job_run(
        run, JobOutcome.failed(error, traceback=TRACE, exception_class="builtins.ValueError")
    )
    (row,) = queue.get_job_attempts(job_id)
    assert (row.error, row.traceback) == ("builtins.ValueError: boom", TRACE)
    assert queue.get_job(job_id).error_message == error


def test_deleting_a_job_deletes_its_history(queue):
    name = unique_queue("history_deleted")
    job_id = queue.enqueue(Job(queue_name=name, max_attempts=1))
    (run,) = claim(queue, name)
    queue.finish_job_run(run, JobOutcome.failed("boom"))
    assert len(queue.get_job_attempts(job_id)) == 1
    queue.delete_job(job_id)
    assert queue.get_job_attempts(job_id) == []


def test_an_id_that_is_not_a_uuid_is_refused(queue):
    from queues.api import InvalidJob

    with pytest.raises(InvalidJob):
        queue.get_job_attempts("not-a-uuid")
