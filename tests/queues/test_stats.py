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


def test_counts_are_exact_below_the_cap_and_capped_above(monkeypatch):
    name, queue = unique_queue("cap"), JobQueue()
    queue.enqueue_many([Job(queue_name=name) for _ in range(3)])
    assert stats.queue_counts(name)["Pending"] == 3
    monkeypatch.setattr(stats, "COUNT_CAP", 2)
    assert stats.queue_counts(name)["Pending"] == 3  # COUNT_CAP + 1: "at least"
    assert stats.count_cell(stats.STATUS_COLUMNS[0], 3) == ("Pending", 2, True)


def test_queue_names_and_oldest_pending():
    first, second = unique_queue("a"), unique_queue("b")
    queue = JobQueue()
    queue.enqueue(Job(queue_name=first))
    queue.enqueue(Job(queue_name=second))
    assert {first, second} <= set(stats.queue_names())
    row = next(r for r in stats.overview().queues if r.name == first)
    assert row.oldest_pending_at is not None
