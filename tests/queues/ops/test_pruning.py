"""The pruner through the queue's store, on the database and in memory alike: old finished
jobs (with their history), reaper runs and history rows of kept jobs, in bounded batches;
the trigger-kept counters are the database's alone."""

from __future__ import annotations

from datetime import timedelta

from queues.api import DequeueOptions, Job, JobOutcome, JobStatus
from queues.ops.maintenance import FinishedBefore, Pruner
from queues.testing import TestQueue
from tests.queues.conftest import unique_queue

WEEK = timedelta(days=7)


def finished(queue, name: str, outcome, count: int) -> list:
    queue.enqueue_many([Job(queue_name=name, max_attempts=1) for _ in range(count)])
    runs = queue.dequeue(name, DequeueOptions.batch(count))
    for run in runs:
        queue.finish_job_run(run, outcome)
    return [run.id for run in runs]


def test_the_pruner_deletes_what_finished_long_enough_ago_in_batches(queue):
    name, live_name = unique_queue("prune"), unique_queue("prune_live")
    old = [
        *finished(queue, name, JobOutcome.completed(), 3),
        *finished(queue, name, JobOutcome.failed("boom"), 2),
    ]
    live = queue.enqueue_many([Job(queue_name=live_name), Job(queue_name=live_name)])
    assert queue.dequeue_one(live_name).id in live  # one Running, one Pending
    queue.requeue_stale_jobs()  # a reaper run, old by the time of the pruning
    queue.clock.advance(WEEK + timedelta(days=1))
    recent = finished(queue, name, JobOutcome.completed(), 1)

    result = Pruner(queue, older_than=WEEK, batch_size=2).run_once()
    assert (result.jobs, result.reaper_runs) == (5, 1)
    assert all(queue.get_job(job_id) is None for job_id in old)
    assert queue.get_job_attempts(old[-1]) == []
    assert all(queue.get_job(job_id) is not None for job_id in [*live, *recent])
    if isinstance(queue, TestQueue):  # no counters in memory, and no process registered
        assert (result.completion_counts, result.hours_rolled, result.worker_processes) == (0, 0, 0)
    again = Pruner(queue, older_than=WEEK, batch_size=2).run_once()
    assert (again.jobs, again.reaper_runs) == (0, 0)


def test_the_history_goes_with_its_jobs_and_old_rows_of_kept_jobs_go_alone(queue):
    name = unique_queue("prune_history")
    (old_dead,) = finished(queue, name, JobOutcome.failed("boom"), 1)
    recurring = queue.enqueue(Job(queue_name=name, cron_schedule="* * * * *"))
    queue.clock.advance(timedelta(minutes=2))
    queue.finish_job_run(queue.dequeue_one(name), JobOutcome.failed("nightly run failed"))
    queue.clock.advance(timedelta(days=8, minutes=2))
    queue.finish_job_run(queue.dequeue_one(name), JobOutcome.failed("failed again"))

    result = Pruner(queue, older_than=WEEK, batch_size=1).run_once()
    assert (result.jobs, result.failed_attempts) == (1, 1)
    assert queue.get_job(old_dead) is None
    assert [row.error for row in queue.get_job_attempts(recurring)] == ["failed again"]


def test_without_an_age_finished_jobs_are_kept(queue):
    name = unique_queue("prune_keep")
    ids = finished(queue, name, JobOutcome.completed(), 2)
    queue.clock.advance(timedelta(days=365))
    assert Pruner(queue, older_than=None).run_once().jobs == 0
    assert all(queue.get_job(job_id) is not None for job_id in ids)


def test_the_pruners_rule_as_a_query_and_as_a_test_of_one_row_agree(queue):
    name = unique_queue("prune_rule")
    done = finished(queue, name, JobOutcome.completed(), 1)
    dead = finished(queue, name, JobOutcome.dead("x"), 1)
    timed_out = finished(queue, name, JobOutcome.timed_out(), 1)
    cancelled = queue.enqueue(Job(queue_name=name))
    queue.cancel_job(cancelled)  # Failed
    pending = queue.enqueue(Job(queue_name=name))
    queue.clock.advance(timedelta(hours=1))
    mine = [*done, *dead, *timed_out, cancelled, pending]
    rows = [queue.get_job(job_id) for job_id in mine]
    assert {job.status for job in rows} == {
        JobStatus.COMPLETED, JobStatus.DEAD, JobStatus.TIMED_OUT, JobStatus.FAILED,
        JobStatus.PENDING,
    }  # fmt: skip

    rule = FinishedBefore(queue.now())
    selected = set(queue.store.select_ids(rule, among=mine))
    assert selected == {job.id for job in rows if rule.matches(job)}
    assert {*done, *dead, cancelled} <= selected and pending not in selected
    earlier = FinishedBefore(queue.now() - timedelta(hours=2))
    assert queue.store.select_ids(earlier, among=mine) == []
    assert not any(earlier.matches(job) for job in rows)
