"""The history's hourly roll-up (queues.store.counters.rollup) and what the history page reads
(queues.reads.trends), on a moved clock: completions, failures and retries land in the hour of
their write, a roll-up sums the closed hours only and can run again, and a read gives the
same numbers before and after it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from queues.api import Job, JobOutcome, JobQueue, MockClock
from queues.models import HourlyCount
from queues.ops.maintenance import Pruner
from queues.reads import trends
from queues.store.counters import rollup
from tests.conftest import unique_queue

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 11, 29, 21, 5, 7, 250_000, tzinfo=UTC)
HOUR_21 = datetime(2026, 11, 29, 21, tzinfo=UTC)


def run(queue: JobQueue, name: str, outcome, **fields):
    queue.enqueue(Job(queue_name=name, **fields))
    job = queue.dequeue_one(name)
    queue.clock.advance(timedelta(seconds=2))
    queue.finish_job_run(job, outcome)
    return job


def busy_hours(queue: JobQueue, name: str) -> None:
    """At 21h: 3 completions, 1 failure (its last attempt), 2 retries; at 22h: 1 of each."""
    for _ in range(3):
        run(queue, name, JobOutcome.completed())
    run(queue, name, JobOutcome.failed("boom"), max_attempts=1)
    for _ in range(2):
        run(queue, name, JobOutcome.retry(queue.now() + timedelta(hours=5), "again"))
    queue.clock.set(HOUR_21 + timedelta(hours=1, minutes=30))
    run(queue, name, JobOutcome.completed())
    run(queue, name, JobOutcome.dead("gone"))
    run(queue, name, JobOutcome.retry(queue.now() + timedelta(hours=5), "again"))


def rows(name: str) -> dict[datetime, list[int]]:
    return {
        row.hour.astimezone(UTC): [row.completed, row.failed, row.retried]
        for row in HourlyCount.objects.filter(queue_name=name)
    }


def test_a_roll_up_sums_the_closed_hours_only_and_can_run_again():
    name, clock = unique_queue("roll"), MockClock(T0)
    queue = JobQueue(clock=clock)
    busy_hours(queue, name)
    assert rollup.roll_up(clock.now()) == 1  # 22h is under way: only 21h is rolled
    assert rows(name) == {HOUR_21: [3, 1, 2]}
    clock.set(HOUR_21 + timedelta(hours=2, minutes=1))
    rollup.roll_up(clock.now())
    rollup.roll_up(clock.now())  # again: the same rows
    assert rows(name) == {HOUR_21: [3, 1, 2], HOUR_21 + rollup.HOUR: [1, 1, 1]}


def test_a_read_is_the_same_before_and_after_the_roll_up():
    name, clock = unique_queue("roll"), MockClock(T0)
    queue = JobQueue(clock=clock)
    busy_hours(queue, name)
    clock.set(HOUR_21 + timedelta(hours=3))
    first, end = HOUR_21 - timedelta(hours=5), HOUR_21 + timedelta(hours=4)
    before = rollup.hourly(first, end)
    assert before[name, HOUR_21] == [3, 1, 2]
    rollup.roll_up(clock.now())
    assert HourlyCount.objects.filter(queue_name=name).count() == 2
    assert rollup.hourly(first, end) == before


def test_the_rolled_hours_outlive_the_minutes_the_pruner_deletes():
    name, clock = unique_queue("roll"), MockClock(T0)
    queue = JobQueue(clock=clock)
    busy_hours(queue, name)
    clock.set(HOUR_21 + timedelta(hours=2))
    result = Pruner(queue, older_than=None).run_once()
    assert result.hours_rolled == 2
    clock.set(HOUR_21 + timedelta(days=2))  # the minutes are older than a day
    assert Pruner(queue, older_than=None).run_once().completion_counts > 0
    week = trends.history(trends.WINDOWS["7d"], clock.now(), [name])[0]
    assert week.totals == [4, 2, 3]
    # Pruned with the jobs: kept as long as the jobs are.
    clock.set(HOUR_21 + timedelta(days=9))
    assert Pruner(queue, older_than=timedelta(days=7)).run_once().hourly_counts == 2
    assert rows(name) == {}


def test_the_hour_window_is_by_minute_and_the_day_by_hour():
    name, clock = unique_queue("roll"), MockClock(T0)
    queue = JobQueue(clock=clock)
    run(queue, name, JobOutcome.completed())
    run(queue, name, JobOutcome.failed("boom"), max_attempts=1)
    hour = trends.history(trends.WINDOWS["1h"], clock.now(), [name])[0]
    assert len(hour.buckets) == 60
    assert hour.buckets[-1] == (datetime(2026, 11, 29, 21, 5, tzinfo=UTC), [1, 1, 0])
    day = trends.history(trends.WINDOWS["24h"], clock.now(), [name])[0]
    assert len(day.buckets) == 24 and day.buckets[-1] == (HOUR_21, [1, 1, 0])
    assert trends.history(trends.WINDOWS["24h"], clock.now(), ["no-such-queue"]) == []


def test_percentiles_of_run_time_and_wait():
    name, clock = unique_queue("pct"), MockClock(T0)
    queue = JobQueue(clock=clock)
    for seconds in range(1, 101):  # runs of 1 to 100 s, each due 3 s before its start
        queue.enqueue(Job(queue_name=name))
        clock.advance(timedelta(seconds=3))
        job = queue.dequeue_one(name)
        clock.advance(timedelta(seconds=seconds))
        queue.finish_job_run(job, JobOutcome.completed())
    found, sampled = trends.percentiles(name, clock.now() - timedelta(days=1))
    assert sampled == 100
    assert found["run"] == {p: timedelta(seconds=p) for p in (50, 95, 99)}
    assert set(found["wait"].values()) == {timedelta(seconds=3)}
    assert trends.percentiles(name, clock.now() + timedelta(seconds=1)) == ({}, 0)


def test_nearest_rank():
    values = [timedelta(seconds=s) for s in (5, 1, 3)]
    assert trends.nearest_rank(values) == {p: timedelta(seconds=5) for p in (95, 99)} | {
        50: timedelta(seconds=3)
    }


@pytest.mark.django_db(transaction=True)
def test_pruners_rolling_up_at_once_leave_one_row_an_hour():
    from tests.queues.engine.test_concurrency import in_threads

    name, clock = unique_queue("roll_race"), MockClock(T0)
    busy_hours(JobQueue(clock=clock), name)
    clock.set(HOUR_21 + timedelta(hours=2))
    for _ in range(3):
        HourlyCount.objects.all().delete()
        in_threads([lambda: rollup.roll_up(clock.now()) for _ in range(4)])
        assert rows(name) == {HOUR_21: [3, 1, 2], HOUR_21 + rollup.HOUR: [1, 1, 1]}
