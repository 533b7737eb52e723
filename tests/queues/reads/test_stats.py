"""The overview's numbers: bounded counts, throughput per full minute, oldest pending."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from queues.api import DependencyStatus, Job, JobOutcome, JobPriority, JobQueue, MockClock
from queues.reads import stats
from tests.conftest import unique_queue

pytestmark = pytest.mark.django_db


def _complete(queue: JobQueue, name: str) -> None:
    queue.enqueue(Job(queue_name=name))
    queue.finish_job_run(queue.dequeue_one(name), JobOutcome.completed())


def test_throughput_counts_full_minutes_and_the_last_full_minute():
    name = unique_queue("tp")
    now = datetime(2026, 11, 29, 21, 5, 30, tzinfo=UTC)
    for at in (
        now - timedelta(minutes=5),  # 21:00:30
        now - timedelta(minutes=5, seconds=20),  # 21:00:10: the same minute
        now - timedelta(seconds=40),  # 21:04:50: the last full minute
        now - timedelta(minutes=31),  # 20:34:30: before the window
        now,  # 21:05:30: the open minute, not shown yet
    ):
        _complete(JobQueue(clock=MockClock(at)), name)
    spark = stats.throughput(name, now)
    assert len(spark) == stats.SPARK_MINUTES
    assert spark[-1] == 1 and spark[-5] == 2 and sum(spark) == 3
    # A minute later the open minute has closed: it is the last full minute.
    assert stats.throughput(name, now + timedelta(minutes=1))[-1] == 1
    assert stats.throughput(name, now + timedelta(minutes=1))[-2] == 1


def test_overview_sums_the_last_full_minute_and_names_it():
    first, second = unique_queue("ov_a"), unique_queue("ov_b")
    now = datetime(2026, 11, 29, 21, 5, 30, tzinfo=UTC)
    clock = MockClock(now - timedelta(minutes=1))
    for name in (first, first, second):
        _complete(JobQueue(clock=clock), name)
    overview = stats.overview(now)
    rows = {row.name: row for row in overview.queues}
    assert (rows[first].last_minute, rows[second].last_minute) == (2, 1)
    assert overview.last_minute >= 3  # other tests' queues may add theirs
    assert overview.minute == datetime(2026, 11, 29, 21, 4, tzinfo=UTC)
    assert overview.minute_end == datetime(2026, 11, 29, 21, 5, tzinfo=UTC)


def test_a_recurring_queue_shows_its_completions():
    """A recurring job's row goes back to Pending when a run completes: the queue has no
    Completed jobs, and its throughput is still there."""
    name = unique_queue("tp_cron")
    now = datetime(2026, 11, 29, 21, 5, 30, tzinfo=UTC)
    clock = MockClock(now - timedelta(minutes=3))  # 21:02:30
    queue = JobQueue(clock=clock)
    job_id = queue.enqueue(Job(queue_name=name, cron_schedule="0 * * * * *"))
    for _ in range(2):  # the runs of 21:03 and 21:04
        clock.set(queue.get_job(job_id).next_run_at)
        queue.finish_job_run(queue.dequeue_one(name), JobOutcome.completed())
    row = next(row for row in stats.overview(now).queues if row.name == name)
    assert row.counts["Completed"] == 0 and row.counts["Pending"] == 1
    assert row.spark[-3:] == [0, 1, 1]


def test_queue_counts_are_the_exact_counts_of_the_engine():
    name, queue = unique_queue("cnt"), JobQueue()
    ids = queue.enqueue_many([Job(queue_name=name) for _ in range(3)])
    queue.mark_job_dead(ids[0], "x")
    counts = stats.queue_counts(name)
    assert counts["Pending"] == 2 and counts["Dead"] == 1 and counts["Completed"] == 0
    assert {k: v for k, v in counts.items() if v} == {
        k: v for k, v in queue.get_job_counts_by_status(name).items() if v
    }


def test_overview_lists_queues_and_oldest_pending():
    first, second = unique_queue("a"), unique_queue("b")
    queue = JobQueue()
    queue.enqueue(Job(queue_name=first))
    queue.enqueue(Job(queue_name=second))
    rows = {r.name: r for r in stats.overview().queues}
    assert {first, second} <= rows.keys()
    assert rows[first].oldest_pending_at is not None


def _enqueue_at(queue: JobQueue, clock: MockClock, name: str, due: timedelta, **fields):
    """Enqueue a job of `name` at the clock's time, due `due` from then; a second later."""
    now = clock.now()
    job_id = queue.enqueue(Job(queue_name=name, created_at=now, scheduled_at=now + due, **fields))
    clock.advance(timedelta(seconds=1))
    return job_id


def test_oldest_due_is_the_job_due_longest_whatever_its_place_in_enqueue_order():
    # A job enqueued last but back-dated two hours, at a low priority, waits longest: the
    # due jobs enqueued before it must not hide it.
    name, clock = unique_queue("due_dated"), MockClock(datetime(2026, 12, 3, 12, 0, tzinfo=UTC))
    queue = JobQueue(clock=clock)
    _enqueue_at(queue, clock, name, -timedelta(minutes=1))
    _enqueue_at(queue, clock, name, timedelta(0), priority=JobPriority.CRITICAL)
    _enqueue_at(queue, clock, name, -timedelta(hours=2), priority=JobPriority.LOW)
    assert stats.oldest_due([name], clock.now()) == {
        name: datetime(2026, 12, 3, 10, 0, 2, tzinfo=UTC)
    }


def test_oldest_due_counts_a_retried_job_from_when_its_retry_became_due():
    # The retried job was enqueued first; the job enqueued after it became due before its
    # retry did, and has waited longer.
    name, t0 = unique_queue("due_retry"), datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
    clock = MockClock(t0)
    queue = JobQueue(clock=clock)
    queue.enqueue(Job(queue_name=name, created_at=t0, scheduled_at=t0))
    queue.finish_job_run(
        queue.dequeue_one(name), JobOutcome.retry(t0 + timedelta(minutes=10), error="try later")
    )
    clock.advance(timedelta(minutes=5))
    _enqueue_at(queue, clock, name, timedelta(0))
    assert stats.oldest_due([name], t0 + timedelta(hours=1)) == {name: t0 + timedelta(minutes=5)}
    assert stats.oldest_due([name], t0 + timedelta(minutes=7)) == {name: t0 + timedelta(minutes=5)}
    assert stats.oldest_due([name], t0 + timedelta(minutes=4)) == {}


def test_oldest_due_passes_over_a_disabled_recurring_job_and_reads_both_dependency_states():
    name, clock = unique_queue("due_states"), MockClock(datetime(2026, 12, 3, 12, 0, tzinfo=UTC))
    queue = JobQueue(clock=clock)
    disabled = _enqueue_at(queue, clock, name, -timedelta(hours=3))
    Job.objects.filter(id=disabled).update(cron_schedule="* * * * *", recurring=False)
    _enqueue_at(queue, clock, name, -timedelta(hours=1))
    released = _enqueue_at(queue, clock, name, -timedelta(hours=2))
    Job.objects.filter(id=released).update(dependency_status=DependencyStatus.SATISFIED)
    assert stats.oldest_due([name, unique_queue("due_none")], clock.now()) == {
        name: datetime(2026, 12, 3, 10, 0, 2, tzinfo=UTC)
    }
