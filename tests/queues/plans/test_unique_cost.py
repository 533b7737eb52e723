"""What unique keys cost, counted in statements on the database of the run: nothing for a job
without a key, and nothing on any job's claim and run writes (the worker's hot path)."""

from __future__ import annotations

import re
from contextlib import contextmanager

import pytest
from django.db import connection

from queues.api import DequeueOptions, Job, JobOutcome, JobQueue
from tests.queues.conftest import unique_queue

pytestmark = pytest.mark.django_db(transaction=True)


@contextmanager
def statements():
    """Every statement this thread's connection runs, the engine's raw cursors included
    (`execute_wrapper` sees them all; `CaptureQueriesContext` misses PostgreSQL's
    server-binding cursors)."""
    seen: list[str] = []

    def record(execute, sql, params, many, context):
        seen.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        yield seen


def _kinds(sql: list[str]) -> list[str]:
    """Each statement's kind; PostgreSQL's COPY of new jobs is their INSERT."""
    kinds = [s.split()[0].upper() for s in sql]
    return ["INSERT" if kind == "COPY" else kind for kind in kinds]


def test_jobs_without_keys_are_inserted_with_one_statement_and_no_read():
    name = unique_queue("cost_plain")
    queue = JobQueue()
    queue.enqueue(Job(queue_name=name))  # the first connection's set-up is not counted
    with statements() as sql:
        # 40: on PostgreSQL a COPY (from 32 jobs), counted as the INSERT it stands for.
        queue.enqueue_many([Job(queue_name=name) for _ in range(40)])
    assert _kinds(sql).count("INSERT") == 1, sql
    assert not [k for k in _kinds(sql) if k in ("SELECT", "SAVEPOINT")], sql


def test_a_keyed_enqueue_reads_its_holders_once_and_inserts_in_a_savepoint():
    name = unique_queue("cost_keyed")
    queue = JobQueue()
    queue.enqueue(Job(queue_name=name))
    with statements() as sql:
        queue.enqueue_many([Job(queue_name=name, unique_key=f"k{i}") for i in range(20)])
    kinds = _kinds(sql)
    assert kinds.count("SELECT") == 1 and kinds.count("INSERT") == 1, sql
    assert kinds.count("SAVEPOINT") == 1, sql


def _run_statements(queue: JobQueue, name: str, keyed: bool) -> list[str]:
    keys = ("a", "b") if keyed else (None, None)
    queue.enqueue_many([Job(queue_name=name, unique_key=key) for key in keys])
    with statements() as sql:
        claimed = queue.dequeue(name, DequeueOptions.batch(2))
        queue.finish_and_start_runs([(claimed[0], JobOutcome.completed())], [claimed[1]])
        queue.heartbeat_jobs([claimed[1]], DequeueOptions().lease_duration)
        queue.finish_job_run(claimed[1], JobOutcome.completed())
    return sql


def test_a_keyed_jobs_claim_and_run_writes_are_a_plain_jobs():
    queue = JobQueue()
    plain = _run_statements(queue, unique_queue("cost_run_plain"), keyed=False)
    keyed = _run_statements(queue, unique_queue("cost_run_keyed"), keyed=True)
    assert plain == keyed
    # What a statement writes and how it finds its rows, not the columns a claim reads back.
    assert not [s for s in map(_without_columns_read, plain) if "unique" in s], (
        "no run write touches a slot"
    )


def _without_columns_read(statement: str) -> str:
    """`statement` without the columns it only reads back: its RETURNING clause, or the
    select list of a SELECT (MariaDB's claim is a locking read of its rows)."""
    text = statement.lower().split("returning")[0]
    if text.lstrip().startswith("select"):
        text = re.split(r"\bfrom\b", text, maxsplit=1)[-1]
    return text


def test_the_slot_index_holds_only_jobs_with_a_key(vendor):
    with connection.cursor() as cursor:
        if vendor == "postgresql":
            cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'job_unique_slot'")
            definition = cursor.fetchone()[0]
            assert "UNIQUE" in definition and "WHERE (unique_slot IS NOT NULL)" in definition
        elif vendor == "sqlite":
            cursor.execute("SELECT sql FROM sqlite_master WHERE name = 'job_unique_slot'")
            assert 'WHERE "unique_slot" IS NOT NULL' in cursor.fetchone()[0]
        else:
            # MySQL and MariaDB have no partial index; their unique index takes any number
            # of NULLs, and an UPDATE that leaves the column alone does not touch it.
            cursor.execute("SHOW INDEX FROM queues_job WHERE Key_name = 'job_unique_slot'")
            row = cursor.fetchone()
            assert row is not None and row[1] == 0  # Non_unique = 0
