"""The queue page's list: keyset pages over ties, filters, and cursors from the URL."""

from __future__ import annotations

import pytest

from queues.api import Job, JobQueue
from queues.reads.listing import JobFilter, decode_cursor, list_jobs
from tests.conftest import unique_queue

pytestmark = pytest.mark.django_db


def _every_page(name: str, size: int) -> list:
    """The ids of every page of queue `name`, following the cursors."""
    seen, cursor = [], ""
    while True:
        page = list_jobs(JobFilter(name), cursor, size=size)
        seen += [job.id for job in page.jobs]
        if not page.next_cursor:
            return seen
        cursor = page.next_cursor


@pytest.mark.parametrize("dead", [0, 3], ids=["one-status", "two-statuses"])
def test_pages_cover_jobs_enqueued_at_one_instant_exactly_once(dead):
    queue, name = JobQueue(), unique_queue("list")
    ids = queue.enqueue_many([Job(queue_name=name) for _ in range(7)])  # one created_at
    for job_id in ids[:dead]:
        queue.mark_job_dead(job_id, "x")
    seen = _every_page(name, size=3)
    assert sorted(seen) == sorted(ids) and len(seen) == len(ids)


def test_pages_merge_statuses_newest_first():
    queue, name = JobQueue(), unique_queue("list")
    first = queue.enqueue(Job(queue_name=name))
    second = queue.enqueue(Job(queue_name=name))
    queue.mark_job_dead(first, "x")
    jobs = list_jobs(JobFilter(name)).jobs
    assert [job.id for job in jobs] == [second, first]


@pytest.mark.parametrize(
    "text", ["", "nonsense", "2026-01-01T00:00:00~zz", "2026-01-01~" + "a" * 32]
)
def test_bad_cursors_are_ignored(text):
    assert decode_cursor(text) is None


def test_filter_from_query_keeps_only_known_values():
    flt = JobFilter.from_query("q", {"status": "Bogus", "priority": "9", "q": "  x  "})
    assert (flt.status, flt.priority, flt.search) == ("", None, "x")
    flt = JobFilter.from_query("q", {"status": "Dead", "priority": "4"})
    assert (flt.status, flt.priority) == ("Dead", 4)


def test_pages_across_statuses_come_newest_first_without_gaps():
    from datetime import timedelta

    from queues.api import MockClock

    clock = MockClock()
    queue, name = JobQueue(clock=clock), unique_queue("list")
    ids = []
    for i in range(12):
        clock.advance(timedelta(seconds=1))
        ids.append(queue.enqueue(Job(queue_name=name)))
        if i % 3 == 0:
            queue.mark_job_dead(ids[-1], "x")
    assert _every_page(name, size=4) == ids[::-1]
