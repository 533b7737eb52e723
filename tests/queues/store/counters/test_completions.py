"""The trigger-kept completions per minute: what counts as a completion, in which minute, and
what leaves the counts alone. (Exactness under concurrency:
tests/queues/store/counters/test_counts.py.)"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from queues.api import (
    DequeueOptions,
    InvalidJobTransition,
    Job,
    JobOutcome,
    JobQueue,
    JobStatus,
    MockClock,
)
from queues.models import CompletionCount
from queues.models import Job as JobRow
from queues.store.counters import completions
from tests.conftest import unique_queue

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 11, 29, 21, 5, 7, 250_000, tzinfo=UTC)


def minute(at: datetime) -> datetime:
    return at.replace(second=0, microsecond=0)


def kept(name: str) -> dict[datetime, int]:
    far = timedelta(days=3650)
    return completions.per_minute([name], T0 - far, T0 + far).get(name, {})


def complete_one(queue: JobQueue, name: str, **fields) -> Job:
    queue.enqueue(Job(queue_name=name, **fields))
    job = queue.dequeue_one(name)
    queue.finish_job_run(job, JobOutcome.completed())
    return job


def test_completions_are_counted_in_the_minute_of_completed_at():
    name, clock = unique_queue("cc"), MockClock(T0)
    queue = JobQueue(clock=clock)
    complete_one(queue, name)
    clock.advance(timedelta(seconds=52))  # 21:05:59.25, the same minute
    complete_one(queue, name)
    clock.advance(timedelta(seconds=1))  # 21:06:00.25
    complete_one(queue, name)
    assert kept(name) == {minute(T0): 2, minute(T0) + timedelta(minutes=1): 1}


def test_a_batch_of_completions_is_counted_once_each():
    name = unique_queue("cc_batch")
    queue = JobQueue(clock=MockClock(T0))
    queue.enqueue_many([Job(queue_name=name) for _ in range(7)])
    runs = queue.dequeue(name, DequeueOptions.batch(7))
    queue.finish_job_runs([(run, JobOutcome.completed()) for run in runs])
    assert kept(name) == {minute(T0): 7}


def test_claims_heartbeats_failures_and_releases_count_nothing():
    name = unique_queue("cc_none")
    queue = JobQueue(clock=MockClock(T0))
    queue.enqueue_many([Job(queue_name=name, max_attempts=2) for _ in range(3)])
    first, second, third = queue.dequeue(name, DequeueOptions.batch(3))
    assert queue.heartbeat_jobs([first, second, third], timedelta(minutes=5)) == 3
    queue.finish_job_run(first, JobOutcome.failed("retry me"))
    queue.finish_job_run(second, JobOutcome.dead("poison"))
    queue.release_job_run(third)
    assert kept(name) == {}


def test_each_run_of_a_recurring_job_is_a_completion():
    """Its row goes back to Pending with the new completed_at: a completion all the same."""
    name, clock = unique_queue("cc_cron"), MockClock(T0)
    queue = JobQueue(clock=clock)
    job_id = queue.enqueue(Job(queue_name=name, cron_schedule="0 * * * * *"))
    runs = []
    for _ in range(3):  # 21:06, 21:07, 21:08
        clock.set(queue.get_job(job_id).next_run_at)
        runs.append(minute(clock.now()))
        queue.finish_job_run(queue.dequeue_one(name), JobOutcome.completed())
    assert queue.get_job(job_id).status == JobStatus.PENDING
    assert kept(name) == dict.fromkeys(runs, 1)


def test_a_failed_run_of_a_recurring_job_is_not_a_completion():
    name, clock = unique_queue("cc_cron_fail"), MockClock(T0)
    queue = JobQueue(clock=clock)
    job_id = queue.enqueue(Job(queue_name=name, cron_schedule="0 * * * * *", max_attempts=1))
    clock.set(queue.get_job(job_id).next_run_at)
    queue.finish_job_run(queue.dequeue_one(name), JobOutcome.failed("bad run"))
    assert kept(name) == {}


def test_a_completed_job_run_again_keeps_its_first_completion_and_counts_the_next():
    """The engine refuses to retry a completed job; sent back to Pending by hand (SQL, the
    admin's list editing) and completed again, it has completed twice: the first minute
    keeps its count, the second gets one."""
    name, clock = unique_queue("cc_again"), MockClock(T0)
    queue = JobQueue(clock=clock)
    job = complete_one(queue, name)
    with pytest.raises(InvalidJobTransition):
        queue.retry_job(job.id)
    clock.advance(timedelta(minutes=2))
    JobRow.objects.filter(id=job.id).update(status=JobStatus.PENDING, scheduled_at=clock.now())
    assert kept(name) == {minute(T0): 1}, "leaving Completed undoes no completion"
    queue.finish_job_run(queue.dequeue_one(name), JobOutcome.completed())
    assert kept(name) == {minute(T0): 1, minute(T0) + timedelta(minutes=2): 1}


def test_deleting_completed_jobs_leaves_the_counts():
    name = unique_queue("cc_delete")
    queue = JobQueue(clock=MockClock(T0))
    job = complete_one(queue, name)
    queue.delete_job(job.id)
    assert kept(name) == {minute(T0): 1}


def test_writes_outside_the_engine_are_counted_once():
    name = unique_queue("cc_orm")
    at = T0 - timedelta(hours=2)
    # Inserted already completed (an import, `filljobs`): a completion of its minute.
    JobRow.objects.create(queue_name=name, status=JobStatus.COMPLETED, completed_at=at)
    row = JobRow.objects.create(queue_name=name)
    JobRow.objects.filter(id=row.id).update(status=JobStatus.COMPLETED, completed_at=T0)
    # Writing the same completed_at again, or anything else, is no new completion.
    JobRow.objects.filter(queue_name=name).update(completed_at=T0, priority=3)
    JobRow.objects.get(id=row.id).save()
    assert kept(name) == {minute(at): 1, minute(T0): 2}


def test_recount_rebuilds_the_minutes_from_a_given_one():
    name = unique_queue("cc_recount")
    for at in (T0 - timedelta(minutes=10), T0, T0 + timedelta(seconds=30)):
        complete_one(JobQueue(clock=MockClock(at)), name)
    CompletionCount.objects.filter(queue_name=name).update(n=99)
    # From within T0's minute: that whole minute is counted, the earlier one no more.
    completions.recount(since=T0 - timedelta(seconds=5))
    assert kept(name) == {minute(T0): 2}
