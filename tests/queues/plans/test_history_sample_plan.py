"""The history page's sample of a queue's newest completions (queues.reads.trends.percentiles) is
read from the `job_queue_status` index alone, which carries the times it reads: read
through the rows, six queues' samples of 1,000 missed MariaDB's buffer pool (350 to 430 ms
of statements at a million jobs; docs/benchmarks/journal.md). Read from the plans."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from queues.api import Job, JobQueue, JobStatus
from queues.models import Job as JobRow
from queues.reads.trends import percentiles
from tests.queues.conftest import unique_queue

pytestmark = pytest.mark.django_db


def _plan(sql: str) -> str:
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("EXPLAIN QUERY PLAN " + sql)
            return "\n".join(row[3] for row in cursor.fetchall())
        cursor.execute("EXPLAIN FORMAT=JSON " + sql)
        return cursor.fetchone()[0]  # MariaDB's


def test_the_history_sample_is_read_from_the_index_alone():
    if connection.vendor == "postgresql":
        # Its plan on a test's few rows is no guide (it picks the status index); on a million
        # jobs it reads job_queue_status, heap-free once vacuumed (docs/benchmarks/journal.md).
        pytest.skip("MariaDB's and SQLite's plans")
    queue, others = JobQueue(), [unique_queue("sample") for _ in range(3)]
    now = timezone.now()
    for name in others:
        ids = queue.enqueue_many(Job(queue_name=name) for _ in range(30))
        JobRow.objects.filter(id__in=ids[:20]).update(
            status=JobStatus.COMPLETED, started_at=now, completed_at=now + timedelta(seconds=1)
        )
    with CaptureQueriesContext(connection) as ctx:
        found, sampled = percentiles(others[0], now - timedelta(hours=1))
    assert sampled == 20 and found["run"][50] == timedelta(seconds=1)
    (sql,) = [q["sql"] for q in ctx.captured_queries]
    plan = _plan(sql)
    assert "job_queue_status" in plan, plan
    if connection.vendor == "sqlite":
        assert "COVERING INDEX job_queue_status" in plan, plan
    else:
        (table,) = [step["table"] for step in json.loads(plan)["query_block"]["nested_loop"]]
        assert table["key"] == "job_queue_status" and table.get("using_index"), plan
