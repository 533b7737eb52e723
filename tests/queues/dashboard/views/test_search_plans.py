"""The all-queues jobs page at a million rows (issue 16): a tag with a row-by-row filter reads
its window's jobs by primary key, read from each database's plan; and the "all matching"
confirmation of a filter that reads rows counts a bounded window and says so."""

from __future__ import annotations

import json
import re
import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from queues.reads import search_page
from queues.reads.search import SearchFilter
from queues.reads.search_page import count_matches, search_jobs
from tests.queues.dashboard.views.conftest import HTMX, enqueue, make_dead

pytestmark = pytest.mark.django_db


def _page_statement(flt: SearchFilter) -> str:
    """The statement that reads the page's jobs (the one from the jobs' table)."""
    with CaptureQueriesContext(connection) as ctx:
        search_jobs(flt)
    table = f"FROM {connection.ops.quote_name('queues_job')} "
    (sql,) = [q["sql"] for q in ctx.captured_queries if table in q["sql"] + " "]
    return sql


def _plan(sql: str) -> str:
    """The database's plan of `sql`, as text."""
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("EXPLAIN QUERY PLAN " + sql)
            return "\n".join(row[3] for row in cursor.fetchall())
        if connection.vendor == "mysql":
            cursor.execute("EXPLAIN FORMAT=JSON " + sql)
            return cursor.fetchone()[0]
        cursor.execute("EXPLAIN (FORMAT JSON) " + sql)
        plan = cursor.fetchone()[0]
        return plan if isinstance(plan, str) else json.dumps(plan)


def test_a_tag_with_a_status_reads_the_windows_jobs_by_primary_key(engine, qname, monkeypatch):
    # Without the window's ids, the page's statement semi-joined every job of the tag
    # (SQLite: 5,000 primary-key reads for "vip" on 1,000,000 jobs) or walked every job of
    # the window's time range (MariaDB), to find a page among the window's 200 to 1,000.
    tag = f"plan-{uuid.uuid4().hex[:8]}"
    dead = [make_dead(engine, qname, tags=[tag]).id for _ in range(3)]
    for _ in range(5):
        enqueue(engine, qname, tags=[tag])
    monkeypatch.setattr(search_page, "SCAN_WINDOW", 4 * search_page.TAG_WINDOW_DIVISOR)
    monkeypatch.setattr(search_page, "MYSQL_SCAN_WINDOW", 4 * search_page.TAG_WINDOW_DIVISOR)
    flt = SearchFilter.from_query({"tag": tag, "status": "Dead"})
    plan = _plan(_page_statement(flt))
    assert "queues_jobtag" not in plan and "job_tag" not in plan, plan  # not read again
    if connection.vendor == "sqlite":
        reads = [step for step in plan.splitlines() if step.startswith(("SEARCH", "SCAN"))]
        assert all("sqlite_autoindex_queues_job_1 (id=?)" in step for step in reads), plan
    # What the window holds is all found, a window at a time.
    found, cursor = [], ""
    for _ in range(5):
        page = search_jobs(flt, cursor)
        found += [job.id for job in page.jobs]
        cursor = page.next_cursor
        if not cursor:
            break
    assert sorted(found) == sorted(dead)


def test_the_count_of_a_filter_that_reads_rows_is_bounded_and_says_so(
    operator_client, engine, qname, monkeypatch
):
    marker = f"err-{uuid.uuid4().hex[:8]}"
    for _ in range(6):
        engine.cancel_job(enqueue(engine, qname).id, f"{marker} timeout")
    exact = SearchFilter.from_query({"queue": qname, "status": "Failed"})
    monkeypatch.setattr(search_page, "COUNT_WINDOW", 4)
    monkeypatch.setattr(search_page, "MYSQL_COUNT_WINDOW", 4)
    assert count_matches(exact).n == 6 and not count_matches(exact).window  # by an index
    bounded = count_matches(SearchFilter.from_query({"error": marker}))
    assert bounded.n <= 4 and bounded.window == 4 and bounded.down_to is not None
    body = operator_client.post(
        reverse("dashboard:bulk-confirm"), {"action": "retry", "error": marker}, headers=HTMX
    ).content.decode()
    assert "Counted among the newest 4 jobs only" in body
    assert "Yes, retry every matching job" in body
    monkeypatch.setattr(search_page, "COUNT_WINDOW", 1_000_000)
    monkeypatch.setattr(search_page, "MYSQL_COUNT_WINDOW", 1_000_000)
    whole = count_matches(SearchFilter.from_query({"error": marker}))
    assert (whole.n, whole.window) == (6, 0)  # the table is within the window: exact


def test_the_count_of_a_tag_reads_the_tags_index_alone(engine, qname):
    # Through the jobs, each tagged job was looked up by primary key as well: 5,000 random
    # reads for "vip" on 1,000,000 jobs (444 ms on MariaDB, its buffer pool missing).
    tag = f"count-{uuid.uuid4().hex[:8]}"
    for queue in (qname, qname + "-b", qname + "-b"):
        enqueue(engine, queue, tags=[tag, "other"])
    with CaptureQueriesContext(connection) as ctx:
        counts = [count_matches(SearchFilter.from_query(q)).n
                  for q in ({"tag": tag}, {"tag": tag, "queue": qname + "-b"})]  # fmt: skip
    assert counts == [3, 2]
    for query in ctx.captured_queries:
        plan = _plan(query["sql"])
        assert re.search(r"queues_job\b(?!tag)", plan) is None, plan  # not the jobs' table
        assert "queues_jobtag" in plan or "job_tag" in plan, plan
