"""Stores: queue configurations, and what a limited claim reads (the limit under its lock,
the queue's Running jobs)."""

from __future__ import annotations

from queues.api import JobStatus
from queues.models import QueueConfig

from ..conftest import unique_queue
from .conftest import T0, claim, insert, job


def test_a_configuration_is_inserted_then_updated_in_place(store):
    name = unique_queue("config")
    assert store.get_queue_config(name) is None
    store.set_queue_config(QueueConfig(queue_name=name, max_running=3, updated_at=T0))
    store.set_queue_config(
        QueueConfig(queue_name=name, max_running=5, updated_at=T0, updated_by="ops")
    )
    row = store.get_queue_config(name)
    assert (row.max_running, row.updated_by, row.updated_at) == (5, "ops", T0)
    row.max_running = 9  # the caller's copy
    assert store.get_queue_config(name).max_running == 5
    assert store.get_queue_config(unique_queue("config_other")) is None


def test_the_locked_limit_is_the_rows_or_none(store):
    name = unique_queue("config_lock")
    assert store.atomic(lambda: store.lock_queue_limit(name)) is None
    store.set_queue_config(QueueConfig(queue_name=name, max_running=2, updated_at=T0))
    assert store.atomic(lambda: store.lock_queue_limit(name)) == 2
    store.set_queue_config(QueueConfig(queue_name=name, max_running=None, updated_at=T0))
    assert store.atomic(lambda: store.lock_queue_limit(name)) is None


def test_running_jobs_are_counted_by_queue(store):
    name, other = unique_queue("count_running"), unique_queue("count_other")
    insert(store, *[job(name, age=i) for i in range(4)], job(other))
    assert store.count_running(name) == 0
    claim(store, name, limit=3)
    claim(store, other)
    insert(store, job(name, status=JobStatus.DEAD, failed_at=T0))
    assert (store.count_running(name), store.count_running(other)) == (3, 1)
