"""What the engine sets up on its own connections, whatever DATABASES say (queues/store/
session.py): IMMEDIATE transactions on SQLite, prepared statements on PostgreSQL."""

from __future__ import annotations

import sys

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from queues.api import Job, JobQueue
from queues.store.sql import session
from tests.conftest import unique_queue
from tests.pgbouncer.pooling import skip_through_a_pooler

pytestmark = pytest.mark.django_db(transaction=True)

sqlite_only = pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's BEGIN")
postgres_only = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="PostgreSQL's prepared statements"
)


@sqlite_only
def test_the_engines_sqlite_transactions_begin_immediate_whatever_the_settings():
    # These settings leave transaction_mode unset: Django would BEGIN (DEFERRED).
    assert connection.settings_dict["OPTIONS"].get("transaction_mode") is None
    with CaptureQueriesContext(connection) as queries, session.atomic(connection):
        assert connection.in_atomic_block
    assert queries.captured_queries[0]["sql"] == "BEGIN IMMEDIATE"
    assert connection.transaction_mode is None  # the project's own transactions as before

    with CaptureQueriesContext(connection) as queries, transaction.atomic():
        pass
    assert queries.captured_queries[0]["sql"] == "BEGIN"


@sqlite_only
def test_inside_a_callers_transaction_the_engine_takes_a_savepoint():
    with (
        transaction.atomic(),
        CaptureQueriesContext(connection) as queries,
        session.atomic(connection),
    ):
        pass
    assert not any(q["sql"].startswith("BEGIN") for q in queries.captured_queries)
    assert queries.captured_queries[0]["sql"].startswith("SAVEPOINT")


def _prepared() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return [row[0] for row in cursor.fetchall()]


@postgres_only
def test_the_engines_statements_are_prepared_and_djangos_are_not():
    skip_through_a_pooler()
    connection.close()
    name = unique_queue("prepared")
    queue = JobQueue()
    queue.enqueue_many([Job(queue_name=name) for _ in range(3)])
    for _ in range(3):
        queue.dequeue_one(name)
        Job.objects.filter(queue_name=name).count()  # Django's cursor, run as often
    statements = _prepared()
    assert any("FOR UPDATE SKIP LOCKED" in s for s in statements), statements
    assert not any("COUNT(*)" in s for s in statements), statements
    # Preparing is off for every cursor that does not ask for it.
    assert connection.connection.prepare_threshold == sys.maxsize
    connection.close()


@postgres_only
def test_pg_prepare_off_prepares_nothing(settings):
    skip_through_a_pooler()
    settings.HAMMERWEB = {"PG_PREPARE": False}
    connection.close()
    name = unique_queue("unprepared")
    queue = JobQueue()
    queue.enqueue_many([Job(queue_name=name) for _ in range(3)])
    # A connection that would prepare every statement (OPTIONS["prepare_threshold"] = 0):
    # the engine's cursors still do not (a pooler without prepared statements).
    connection.ensure_connection()
    connection.connection.prepare_threshold = 0
    for _ in range(3):
        queue.dequeue_one(name)
    assert _prepared() == []
    connection.close()
