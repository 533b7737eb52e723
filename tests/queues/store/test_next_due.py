"""Stores: `next_due`, when an idle worker should look at a queue again, and `data_version`."""

from __future__ import annotations

import re
import threading
from datetime import timedelta

from django.db import connection

from queues import enums
from queues.api import JobPriority
from queues.models import QueuePause
from queues.store.sql.runs import NEXT_DUE_CHUNK
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


def read_counting(store, names):
    """`store.next_due_many(names)`, and the statements it sent (None: not SQL)."""
    if getattr(store, "vendor", None) is None:
        return store.next_due_many(names), None
    statements = []

    def count(execute, sql, *args):
        statements.append(sql)
        return execute(sql, *args)

    with connection.execute_wrapper(count):
        return store.next_due_many(names), len(statements)


def test_next_due_many_reads_every_queue_s_next_due_in_one_statement(store):
    due, later, paused, empty = (unique_queue("many") for _ in range(4))
    insert(store, job(due, age=5), job(later, age=-30), job(paused, age=5))
    store.pause(QueuePause(queue_name=paused, paused_at=T0))
    names = [later, due, paused, empty, due]
    dues, statements = read_counting(store, names)
    if statements is not None:  # SQL: the idle process's one look for all its queues
        assert statements == 1
    assert dues == {
        due: T0 - timedelta(seconds=5),
        later: T0 + timedelta(seconds=30),
        paused: None,
        empty: None,
    }
    assert dues == {name: store.next_due(name) for name in names}
    assert store.next_due_many([]) == {}


def test_next_due_many_of_many_queues_reads_them_a_few_at_a_time(store):
    names = [unique_queue("many") for _ in range(2 * NEXT_DUE_CHUNK + 3)]
    insert(store, *(job(name, age=i) for i, name in enumerate(names) if i % 3))
    dues, statements = read_counting(store, names)
    if statements is not None:  # SQLite refuses a UNION of 500; PostgreSQL plans slowly
        assert statements == 3
    assert dues == {name: store.next_due(name) for name in names}
    assert sum(due is not None for due in dues.values()) == len(names) - 7


def test_the_next_due_query_names_no_parameter_but_the_queue(store):
    if getattr(store, "vendor", None) is None:
        return
    assert set(re.findall(r"%\((\w+)\)s", store.queries["next_due"])) == {"queue"}


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
