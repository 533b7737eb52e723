"""The overview's numbers: bounded counts, throughput per minute, oldest pending."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from queues import stats
from queues.api import Job, JobOutcome, JobQueue, MockClock
from tests.conftest import unique_queue

pytestmark = pytest.mark.django_db


def _complete(queue: JobQueue, name: str) -> None:
    queue.enqueue(Job(queue_name=name))
    queue.finish_job_run(queue.dequeue_one(name), JobOutcome.completed())


def test_throughput_per_minute_and_in_the_last_minute():
    name, now = unique_queue("tp"), timezone.now()
    _complete(JobQueue(), name)
    earlier = JobQueue(clock=MockClock(now - timedelta(minutes=5)))
    _complete(earlier, name)
    _complete(earlier, name)
    spark, last_minute = stats.throughput(name, timezone.now())
    assert last_minute == 1
    assert sum(spark) == 3 and spark[-1] + spark[-2] >= 1
    assert max(spark) == 2  # the two of five minutes ago share a minute


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


def test_the_minute_cache_reads_closed_minutes_once_and_agrees_with_a_full_read():
    name, now = unique_queue("mc"), timezone.now()
    for minutes_ago in (20, 5, 5):
        _complete(JobQueue(clock=MockClock(now - timedelta(minutes=minutes_ago))), name)
    _complete(JobQueue(clock=MockClock(now)), name)
    cache = stats.MinuteCache()
    assert stats.throughput(name, now, cache) == stats.throughput(name, now)
    # The minutes that closed over a minute ago are kept; the next read starts after them.
    settled = (now - stats.MinuteCache.SETTLE).replace(second=0, microsecond=0)
    assert cache.until[name] == settled
    assert sum(cache.minutes[name].values()) == 3
    # A completion stamped in a kept minute after it was read is not counted again: those
    # minutes are not read any more (completions are stamped as they are committed).
    _complete(JobQueue(clock=MockClock(now - timedelta(minutes=20))), name)
    later = now + timedelta(seconds=1)
    _complete(JobQueue(clock=MockClock(later)), name)
    spark, last_minute = stats.throughput(name, later, cache)
    assert sum(spark) == 5 and last_minute == 2
    full_spark, full_last = stats.throughput(name, later)
    assert sum(full_spark) == 6 and full_last == 2
