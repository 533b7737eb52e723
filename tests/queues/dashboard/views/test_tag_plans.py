"""A tag combined with a status, read along the rarer of the two (`queues.reads.tag_plans`): the
same jobs in the same order and pages whichever index is read, on the queue page and in the
admin, and the choice follows the counts."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

import queues.admin.tags as admin_tags
from queues.api import JobPriority, JobStatus
from queues.models import Job, JobTag
from queues.reads import listing, tag_plans
from queues.reads.listing import JobFilter, list_jobs
from queues.reads.tag_plans import status_is_rarer

pytestmark = pytest.mark.django_db


def _fill(engine, qname: str) -> tuple[list, list]:
    """Ten jobs tagged eu (four of them Dead, two of those High), and two Dead without it;
    (the Dead tagged ids, the Dead tagged High ids), newest first."""
    jobs = [
        Job(queue_name=qname, tags=["eu"], priority=JobPriority.HIGH if n < 2 else 2)
        for n in range(10)
    ]
    ids = engine.enqueue_many(jobs)
    plain = engine.enqueue_many([Job(queue_name=qname) for _ in range(2)])
    for job_id in [*ids[:4], *plain]:
        engine.mark_job_dead(job_id)
    return _newest_first(ids[:4]), _newest_first(ids[:2])


def _newest_first(ids: list) -> list:
    """In page order, as the database compares ids (jobs enqueued together tie on time)."""
    return list(
        Job.objects.filter(id__in=ids).order_by("-created_at", "-id").values_list("id", flat=True)
    )


def _every_page(flt: JobFilter, size: int = 3) -> list:
    ids, cursor = [], ""
    while True:
        page = list_jobs(flt, cursor, size=size)
        ids += [job.id for job in page.jobs]
        if not page.next_cursor:
            return ids
        cursor = page.next_cursor


@pytest.fixture(params=[False, True], ids=["along the tag", "along the status"])
def plan(request, monkeypatch):
    """Each read forced, whatever the counts say."""
    for module in (listing, admin_tags):
        monkeypatch.setattr(module, "status_is_rarer", lambda *args: request.param)
    return request.param


def test_both_reads_give_the_same_pages(engine, qname, plan):
    dead, dead_high = _fill(engine, qname)
    assert _every_page(JobFilter(qname, JobStatus.DEAD, tag="eu")) == dead
    high = JobFilter(qname, JobStatus.DEAD, priority=JobPriority.HIGH, tag="eu")
    assert _every_page(high, size=1) == dead_high


def test_the_choice_follows_the_counts(engine, qname):
    _fill(engine, qname)  # 10 eu, 6 Dead, 6 Pending
    assert status_is_rarer("eu", JobStatus.DEAD, qname), "6 Dead < 10 eu"
    engine.enqueue_many([Job(queue_name=qname, tags=["rare"])])
    assert not status_is_rarer("rare", JobStatus.DEAD, qname), "1 rare < 6 Dead"
    assert status_is_rarer("eu", JobStatus.RUNNING, qname), "no job Running"
    assert status_is_rarer("eu", JobStatus.DEAD, None), "counted over every queue"


def test_the_tags_rows_are_counted_no_further_than_the_cap(engine, qname, monkeypatch):
    _fill(engine, qname)
    monkeypatch.setattr(tag_plans, "TAG_COUNT_CAP", 2)
    with CaptureQueriesContext(connection) as seen:
        assert status_is_rarer("eu", JobStatus.DEAD, qname), "beyond the cap: both common"
    assert any("LIMIT 3" in q["sql"] for q in seen.captured_queries)


def test_along_the_status_the_page_reads_the_jobs_index_with_a_semi_join(engine, qname):
    _fill(engine, qname)
    with CaptureQueriesContext(connection) as seen:
        list_jobs(JobFilter(qname, JobStatus.DEAD, tag="eu"))
    listed = [q["sql"] for q in seen.captured_queries if "EXISTS" in q["sql"].upper()]
    assert len(listed) == 1 and "JOIN" not in listed[0].upper()


def test_the_admin_lists_the_same_jobs_either_way(engine, qname, superuser_client, plan):
    dead, _ = _fill(engine, qname)
    url = reverse("admin:queues_job_changelist")
    for extra in ({}, {"queue_name": qname}):
        response = superuser_client.get(url, {"tag": "eu", "status__exact": "Dead", **extra})
        assert response.status_code == 200
        assert [j.id for j in response.context["cl"].result_list] == dead
        assert response.context["cl"].result_count == 4


def test_a_tag_rows_priority_is_its_jobs_and_the_admin_filters_on_it(
    engine, qname, superuser_client
):
    _, dead_high = _fill(engine, qname)
    rows = JobTag.objects.filter(queue_name=qname).values_list("job__priority", "priority")
    assert all(job == row for job, row in rows)
    url = reverse("admin:queues_job_changelist")
    with CaptureQueriesContext(connection) as seen:
        response = superuser_client.get(
            url, {"tag": "eu", "queue_name": qname, "priority__exact": "3"}
        )
    assert len(response.context["cl"].result_list) == 2
    q = connection.ops.quote_name
    on_tag_rows = f"{q('queues_jobtag')}.{q('priority')} = 3"
    assert any(on_tag_rows in query["sql"] for query in seen.captured_queries)
    junk = superuser_client.get(url, {"tag": "eu", "queue_name": qname, "priority__exact": "x"})
    assert junk.status_code in (200, 302)
