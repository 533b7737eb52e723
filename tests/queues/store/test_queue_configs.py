"""Stores: queue configurations, and what a limited claim reads (the limit under its lock,
the queue's Running jobs)."""

from __future__ import annotations

from queues.api import JobStatus
from tests.queues.conftest import unique_queue
from tests.queues.store.conftest import T0, claim, insert, job


def test_a_configuration_is_inserted_then_updated_in_place(store):
    name = unique_queue("config")
    assert store.get_queue_config(name) is None
    written = store.set_queue_config(name, {"max_running": 3, "updated_at": T0})
    assert (written.queue_name, written.max_running) == (name, 3)
    store.set_queue_config(name, {"max_running": 5, "updated_by": "ops"})
    row = store.get_queue_config(name)
    assert (row.max_running, row.updated_by, row.updated_at) == (5, "ops", T0)
    row.max_running = 9  # the caller's copy
    assert store.get_queue_config(name).max_running == 5
    assert store.get_queue_config(unique_queue("config_other")) is None


def test_an_update_keeps_the_fields_it_does_not_name(store):
    name = unique_queue("config_keep")
    store.set_queue_config(name, {"max_running": 3, "updated_at": T0})
    store.set_queue_config(name, {"rate_limit": 10, "rate_period": 60.0, "rate_tokens": 10})
    row = store.get_queue_config(name)
    assert (row.max_running, row.rate, row.rate_tokens) == (3, (10, 60.0), 10)


def test_the_locked_row_is_the_rows_or_none(store):
    name = unique_queue("config_lock")
    assert store.atomic(lambda: store.lock_queue_limit(name)) is None
    store.set_queue_config(name, {"max_running": 2, "updated_at": T0})
    assert store.atomic(lambda: store.lock_queue_limit(name)).max_running == 2
    store.set_queue_config(name, {"max_running": None, "rate_limit": 4, "rate_period": 0.5})
    locked = store.atomic(lambda: store.lock_queue_limit(name))
    assert (locked.queue_name, locked.max_running, locked.rate) == (name, None, (4, 0.5))


def test_the_rate_bucket_is_written_back(store):
    name = unique_queue("config_bucket")
    store.set_queue_config(name, {"rate_limit": 5, "rate_period": 60.0, "rate_tokens": 5})
    store.atomic(lambda: store.spend_rate_tokens(name, 2, T0))
    locked = store.atomic(lambda: store.lock_queue_limit(name))
    assert (locked.rate_tokens, locked.rate_refilled_at, locked.rate) == (2, T0, (5, 60.0))


def test_running_jobs_are_counted_by_queue(store):
    name, other = unique_queue("count_running"), unique_queue("count_other")
    insert(store, *[job(name, age=i) for i in range(4)], job(other))
    assert store.count_running(name) == 0
    claim(store, name, limit=3)
    claim(store, other)
    insert(store, job(name, status=JobStatus.DEAD, failed_at=T0))
    assert (store.count_running(name), store.count_running(other)) == (3, 1)
