"""Every outcome shape of a batch worker's write goes in the batched, fenced statements: a
handler's result (any JSON value), retries, failures, dead and timed-out runs of a claim are
written with one locking read and one UPDATE per shape, not one statement per job; a run
whose lease was lost writes nothing; error history, signals and dependents as when written
alone. On the database (each vendor) and on the memory store."""

from __future__ import annotations

from datetime import timedelta

import pytest

from queues.api import DequeueOptions, Job, JobOutcome, JobStatus
from queues.testing import TestQueue
from tests.queues.conftest import unique_queue
from tests.queues.support.recording import recorded
from tests.queues.test_signals import fixed, recorder_for
from tests.signal_events import connected

RESULTS = [
    {"ok": True, "n": 1},
    [1, "two", None, 3.5],
    "a string",
    1,
    True,
    0,
    False,
    2.25,
    {"nested": {"deep": [{"x": "é"}]}, "quote": 'it\'s "quoted"'},
]


def claim(queue, name: str, count: int, **job_fields) -> list[Job]:
    queue.enqueue_many(Job(queue_name=name, payload={"i": i}, **job_fields) for i in range(count))
    jobs = queue.dequeue(name, DequeueOptions.batch(count))
    assert len(jobs) == count
    return sorted(jobs, key=lambda job: job.payload["i"])


def test_results_of_every_json_type_are_stored_as_returned(queue):
    name = unique_queue("batch_results")
    jobs = claim(queue, name, len(RESULTS))
    recorder = recorder_for(queue)
    with connected(recorder):
        answers = queue.finish_job_runs(
            [(job, JobOutcome.completed(result)) for job, result in zip(jobs, RESULTS)]
        )
    assert [a.status for a in answers] == [JobStatus.COMPLETED] * len(RESULTS)
    for job, result in zip(jobs, RESULTS, strict=True):
        stored = queue.get_job(job.id)
        assert stored.status == JobStatus.COMPLETED
        assert stored.result == result and type(stored.result) is type(result)
        assert stored.run_token is None and stored.lease_expires_at is None
        assert job.status == JobStatus.COMPLETED and job.result == result
        (succeeded,) = [e for e in recorder.of(job.id) if e.name == "job_succeeded"]
        assert succeeded["result"] == result
    assert queue.get_job_counts_by_status(name)["Completed"] == len(RESULTS)


def test_failures_retries_and_deaths_of_one_write_keep_their_history(queue):
    name = unique_queue("batch_failures")
    jobs = claim(queue, name, 5, max_attempts=2, retry_strategy=fixed(30))
    dying = queue.enqueue(Job(queue_name=name, payload={"i": 9}, max_attempts=1))
    (last,) = queue.dequeue(name)
    assert last.id == dying
    now = queue.now()
    outcomes = [
        JobOutcome.completed({"n": 0}),
        JobOutcome.failed("boom", traceback="Traceback: boom", exception_class="app.Boom"),
        JobOutcome.retry(now + timedelta(minutes=5), error="later"),
        JobOutcome.dead("gave up"),
        JobOutcome.timed_out(),
        JobOutcome.failed("out of attempts"),
    ]
    recorder = recorder_for(queue)
    with connected(recorder):
        answers = queue.finish_job_runs(list(zip([*jobs, last], outcomes, strict=True)))
    statuses = [a.status for a in answers]
    assert statuses == [
        JobStatus.COMPLETED, JobStatus.PENDING, JobStatus.PENDING, JobStatus.DEAD,
        JobStatus.PENDING, JobStatus.DEAD,
    ]  # fmt: skip
    completed, failed, retried, dead, timed_out, exhausted = (
        queue.get_job(job.id) for job in [*jobs, last]
    )
    assert completed.result == {"n": 0}
    assert failed.scheduled_at == now + timedelta(seconds=30)
    assert failed.error_message == "boom" and failed.run_token is None
    assert retried.scheduled_at == now + timedelta(minutes=5)
    assert dead.status == JobStatus.DEAD and dead.failed_at == now
    assert timed_out.timed_out_at == now and timed_out.status == JobStatus.PENDING
    assert exhausted.status == JobStatus.DEAD and exhausted.error_message == "out of attempts"
    (attempt,) = queue.get_job_attempts(failed.id)
    assert (attempt.error, attempt.exception_class) == ("boom", "app.Boom")
    assert attempt.traceback == "Traceback: boom" and attempt.status == JobStatus.PENDING
    assert [a.error for a in queue.get_job_attempts(dead.id)] == ["gave up"]
    assert [a.status for a in queue.get_job_attempts(exhausted.id)] == [JobStatus.DEAD]
    assert queue.get_job_attempts(completed.id) == []
    assert "job_retried" in recorder.names(failed.id)
    assert recorder.names(dead.id)[-2:] == ["job_failed", "job_dead"]


def test_a_run_whose_lease_was_lost_writes_nothing_beside_the_others(queue):
    name = unique_queue("batch_fenced")
    jobs = claim(queue, name, 4, max_attempts=3)
    # The reaper takes two back (their leases expired); another worker claims one again.
    queue.clock.advance(timedelta(minutes=10))
    queue.heartbeat_jobs([jobs[0], jobs[3]], timedelta(minutes=5))
    assert sorted(queue.requeue_stale_jobs().requeued, key=str) == sorted(
        [jobs[1].id, jobs[2].id], key=str
    )
    (again,) = queue.dequeue(name)
    answers = queue.finish_job_runs(
        [
            (jobs[0], JobOutcome.completed({"kept": 0})),
            (jobs[1], JobOutcome.completed({"kept": 1})),
            (jobs[2], JobOutcome.failed("late failure")),
            (jobs[3], JobOutcome.failed("counted")),
        ]
    )
    assert answers[1] is None and answers[2] is None
    assert answers[0].status == JobStatus.COMPLETED and answers[3].status == JobStatus.PENDING
    assert queue.get_job(jobs[0].id).result == {"kept": 0}
    for stale in (jobs[1], jobs[2]):
        row = queue.get_job(stale.id)
        assert row.result is None and row.error_message != "late failure"
        if stale.id == again.id:  # the new run is untouched: Running, its own token
            assert row.status == JobStatus.RUNNING and row.run_token == again.run_token
        else:
            assert row.status == JobStatus.PENDING
        assert stale.run_token is not None  # the caller's copy is left as it was
        assert "late failure" not in [a.error for a in queue.get_job_attempts(stale.id)]
    assert [a.error for a in queue.get_job_attempts(jobs[3].id)] == ["counted"]


def test_dependents_are_released_or_failed_by_batched_outcomes(queue):
    name = unique_queue("batch_deps")
    ok_parent = queue.enqueue(Job(queue_name=name, payload={"i": 0}))
    bad_parent = queue.enqueue(Job(queue_name=name, payload={"i": 1}, max_attempts=1))
    released = queue.enqueue(Job(queue_name=name, payload={"i": 2}, depends_on=[ok_parent]))
    failed = queue.enqueue(Job(queue_name=name, payload={"i": 3}, depends_on=[bad_parent]))
    parents = queue.dequeue(name, DequeueOptions.batch(2))
    by_id = {job.id: job for job in parents}
    answers = queue.finish_job_runs(
        [
            (by_id[ok_parent], JobOutcome.completed({"parent": True})),
            (by_id[bad_parent], JobOutcome.failed("parent failed")),
        ]
    )
    assert answers[0].unblocked == [released]
    assert answers[1].status == JobStatus.DEAD and answers[1].cancelled == [failed]
    assert queue.get_job(released).dependency_status == "satisfied"
    assert queue.get_job(failed).status == JobStatus.FAILED
    (child,) = queue.dequeue(name)
    assert child.id == released


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("count", [2, 20])
def test_a_write_of_results_costs_the_same_statements_however_many_jobs(engine, count):
    name = unique_queue("batch_cost")
    jobs = claim(engine, name, count, max_attempts=2)
    half = count // 2
    finished = [(job, JobOutcome.completed({"n": i})) for i, job in enumerate(jobs[:half])]
    finished += [(job, JobOutcome.failed(f"error {i}")) for i, job in enumerate(jobs[half:])]
    with recorded(engine) as (operations, statements):
        engine.finish_job_runs(finished)
    # (PostgreSQL's completion statement is a WITH: its UPDATE and the start checks' read.)
    writes = [s for s in statements if s.lstrip().upper().startswith(("UPDATE", "INSERT", "WITH"))]
    # The completions' one statement (each with its result; in autocommit where the vendor's
    # UPDATE returns its rows, else in the transaction); for the failures one locking read
    # and one UPDATE (pending again); one history INSERT.
    one_statement = getattr(engine.store, "vendor", None) != "mysql"
    assert operations.count("complete_runs") == (0 if one_statement else 1)
    assert operations.count("lock_runs") == 1 and operations.count("update_each") == 1
    assert "update_runs" not in operations
    assert len(writes) == 3, writes
    assert [engine.get_job(job.id).result for job in jobs[:half]] == [{"n": i} for i in range(half)]


def test_the_memory_store_writes_batched_outcomes_alike():
    queue = TestQueue()
    name = "mem_batch"
    jobs = claim(queue, name, 3)
    answers = queue.finish_job_runs(
        [(jobs[0], JobOutcome.completed(True)), (jobs[1], JobOutcome.completed(1)),
         (jobs[2], JobOutcome.dead("no"))]
    )  # fmt: skip
    assert [a.status for a in answers] == [JobStatus.COMPLETED] * 2 + [JobStatus.DEAD]
    assert queue.get_job(jobs[0].id).result is True and queue.get_job(jobs[1].id).result == 1


@pytest.mark.django_db(transaction=True)
def test_the_completions_of_jobs_with_effects_of_many_claims_are_one_statement(engine):
    """Jobs of a batch complete in the write's transaction (their tallies commit with
    them): one fenced statement for every claim's, a run taken back since left alone."""
    from queues.api import BatchStatus, JobBatch

    name = unique_queue("batch_claims")
    jobs = [Job(queue_name=name, payload={"i": i}) for i in range(6)]
    batch_id = engine.enqueue_batch(JobBatch("b", jobs=jobs))
    first = engine.dequeue(name, DequeueOptions.batch(3))
    second = engine.dequeue(name, DequeueOptions.batch(3))
    assert first[0].run_token != second[0].run_token
    lost = second[0]
    engine.retry_job(lost.id)  # an operator takes it back: its run's write must miss
    finished = [(job, JobOutcome.completed({"n": 1})) for job in first + second]
    with recorded(engine) as (operations, _):
        answers = engine.finish_job_runs(finished)
    assert operations.count("complete_runs") == 1
    assert operations.count("lock_group") == operations.count("update_group") == 1
    assert [answer is None for answer in answers] == [False] * 3 + [True, False, False]
    assert engine.get_job(lost.id).status == JobStatus.PENDING
    status = engine.get_batch_status(batch_id)
    assert (status.status, status.completed_jobs, status.pending_jobs) == (
        BatchStatus.PROCESSING,
        5,
        1,
    )
