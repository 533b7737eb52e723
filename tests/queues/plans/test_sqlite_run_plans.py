"""SQLite: the fenced writes of runs reach their rows by primary key, whatever else is
Running. Compared bare, `status = 'Running'` let SQLite's planner (without ANALYZE's
statistics, as in most databases) read the Running (lease) index instead: every Running
row of every queue, each statement. Read from the plans (EXPLAIN QUERY PLAN), with Running
jobs of other queues in the table."""

from __future__ import annotations

import json

import pytest
from django.db import connection

from queues.api import DequeueOptions, Job, JobQueue
from queues.store.catalogue import queries_for, statements
from tests.conftest import unique_queue

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("name", ["complete_runs", "lock_runs", "start_runs"])
def test_the_writes_of_runs_use_the_primary_key_beside_many_running_jobs(name):
    if connection.vendor != "sqlite":
        pytest.skip("SQLite's planner")
    queue = JobQueue()
    other = unique_queue("plan_other")
    queue.enqueue_many(Job(queue_name=other) for _ in range(200))
    assert len(queue.dequeue(other, DequeueOptions.batch(200))) == 200
    with connection.cursor() as cursor:
        if _has_stats(cursor):  # a database never analysed, as most are
            cursor.execute("DELETE FROM sqlite_stat1")
        ids = ["a" * 32, "b" * 32]
        params = {"ids": json.dumps(ids), "token": "t" * 32, "now": None,
                  "runs": json.dumps([[i, "t" * 32, '{"n": 1}'] for i in ids])}  # fmt: skip
        (sql,) = statements(queries_for("sqlite")[name])
        cursor.execute("EXPLAIN QUERY PLAN " + sql, params)
        plan = [row[3] for row in cursor.fetchall()]
    job_table = [step for step in plan if "queues_job " in f"{step} "]
    assert job_table and all("job_lease_expiry" not in step for step in plan), plan
    assert any("sqlite_autoindex_queues_job_1 (id=?)" in step for step in job_table), plan


def _has_stats(cursor) -> bool:
    cursor.execute("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_stat1'")
    return cursor.fetchone() is not None
