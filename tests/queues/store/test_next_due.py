"""Stores: `next_due`, when an idle worker should look at a queue again, and `data_version`."""

from __future__ import annotations

import threading
from datetime import timedelta

from django.db import connection

from queues import enums
from queues.api import JobPriority
from queues.models import QueuePause
from tests.queues.conftest import unique_queue
from tests.queues.store.conftest import T0, claim, insert, job


def test_next_due_is_the_earliest_job_claimable_by_time_alone(store):
    name = unique_queue("due")
    assert store.next_due(name) is None
    # Never claimable by time alone: waiting for a parent, a disabled recurring job.
    insert(
        store,
        job(name, age=300, dependency_status=enums.DependencyStatus.WAITING),
        job(name, age=300, cron_schedule="* * * * *", recurring=False),
        job(unique_queue("other"), age=600),
    )
    assert store.next_due(name) is None
    insert(store, job(name, age=-60, priority=JobPriority.LOW), job(name, age=-30))
    assert store.next_due(name) == T0 + timedelta(seconds=30)  # the earliest of every level
    insert(store, job(name, age=5, priority=JobPriority.CRITICAL))
    assert store.next_due(name) == T0 - timedelta(seconds=5)  # due now: in the past
    claim(store, name, limit=1)
    assert store.next_due(name) == T0 + timedelta(seconds=30)  # a Running job is not due


def test_next_due_of_a_paused_queue_is_none(store):
    name = unique_queue("due")
    insert(store, job(name, age=5))
    store.pause(QueuePause(queue_name=name, paused_at=T0))
    assert store.next_due(name) is None
    store.resume(name)
    assert store.next_due(name) == T0 - timedelta(seconds=5)


def test_next_due_many_reads_every_queue_s_next_due_in_one_statement(store):
    due, later, paused, empty = (unique_queue("many") for _ in range(4))
    insert(store, job(due, age=5), job(later, age=-30), job(paused, age=5))
    store.pause(QueuePause(queue_name=paused, paused_at=T0))
    names = [later, due, paused, empty, due]
    statements = []
    if getattr(store, "vendor", None) is None:
        dues = store.next_due_many(names)
    else:  # SQL: the idle process's one look for all its queues
        with connection.execute_wrapper(
            lambda run, sql, *args: statements.append(sql) or run(sql, *args)
        ):
            dues = store.next_due_many(names)
        assert len(statements) == 1
    assert dues == {
        due: T0 - timedelta(seconds=5),
        later: T0 + timedelta(seconds=30),
        paused: None,
        empty: None,
    }
    assert dues == {name: store.next_due(name) for name in names}
    assert store.next_due_many([]) == {}


def test_data_version_is_sqlite_s_and_moves_with_another_connection_s_commit(store):
    first = store.data_version()
    if getattr(store, "vendor", None) != "sqlite":
        assert first is None  # no cheap counter: idle workers ask next_due (or get a NOTIFY)
        return
    assert store.data_version() == first  # nothing committed meanwhile

    def commit_elsewhere():
        try:
            insert(store, job(unique_queue("elsewhere")))
        finally:
            connection.close()

    thread = threading.Thread(target=commit_elsewhere)
    thread.start()
    thread.join()
    assert store.data_version() != first
