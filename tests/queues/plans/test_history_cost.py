"""What the error history costs a write: nothing for the runs that completed, one INSERT for
all the runs of a write that failed (a failing queue fails thousands of jobs a second)."""

from __future__ import annotations

from datetime import timedelta

from queues.api import DequeueOptions, Job, JobOutcome, JobStatus, TestQueue
from tests.queues.conftest import unique_queue
from tests.queues.support.recording import recorded


def _claimed(queue, name: str, n: int):
    queue.enqueue_many([Job(queue_name=name, max_attempts=2) for _ in range(n)])
    return queue.dequeue(name, DequeueOptions.batch(n))


def _history(statements: list[str]) -> list[str]:
    return [sql for sql in statements if "queues_failedattempt" in sql]


def test_a_write_of_completions_asks_nothing_of_the_history(queue):
    name = unique_queue("cost_done")
    plain, with_results = _claimed(queue, name, 20), _claimed(queue, name, 5)
    finished = [(job, JobOutcome.completed()) for job in plain]
    finished += [(job, JobOutcome.completed({"n": 1})) for job in with_results]
    starting = queue.enqueue(Job(queue_name=name))
    (held,) = queue.dequeue(name, DequeueOptions.batch(1))
    assert held.id == starting
    with recorded(queue) as (operations, statements):
        queue.finish_and_start_runs(finished, [held])
    assert "insert_attempts" not in operations and _history(statements) == []
    # The completions of both claims, with results or without, are one statement in
    # autocommit (on MariaDB, whose UPDATE returns no rows, one for both claims in the
    # transaction).
    assert operations.count("complete_free_runs") == 1 and "update_each" not in operations
    on_mysql = getattr(queue.store, "vendor", None) == "mysql"
    assert operations.count("complete_runs") == (1 if on_mysql else 0)
    assert queue.get_job_counts_by_status(name)["Completed"] == 25
    assert [queue.get_job(job.id).result for job in with_results] == [{"n": 1}] * 5


def test_a_write_of_many_failures_inserts_their_history_in_one_statement(queue):
    name = unique_queue("cost_failed")
    runs = _claimed(queue, name, 50)
    with recorded(queue) as (operations, statements):
        queue.finish_job_runs([(job, JobOutcome.failed(f"boom {job.id}")) for job in runs])
    assert operations.count("insert_attempts") == 1
    if not isinstance(queue, TestQueue):
        assert len(_history(statements)) == 1, _history(statements)
    assert queue.get_job_counts_by_status(name)["Pending"] == 50
    assert all(len(queue.get_job_attempts(job.id)) == 1 for job in runs)


def test_the_reapers_pass_inserts_its_rescues_history_in_one_statement(queue):
    name = unique_queue("cost_reaped")
    _claimed(queue, name, 30)
    queue.clock.advance(timedelta(minutes=10))
    with recorded(queue) as (operations, statements):
        recovery = queue.requeue_stale_jobs(name)
    assert len(recovery.requeued) == 30
    assert operations.count("insert_attempts") == 1
    if not isinstance(queue, TestQueue):
        assert len(_history(statements)) == 1
    assert queue.get_job_counts_by_status(name)[JobStatus.PENDING] == 30
