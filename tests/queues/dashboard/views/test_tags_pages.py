"""Tags and meta where an operator looks for them: the queue page's tag filter and its rows,
the job page, and the admin's tag filter, column and meta."""

from __future__ import annotations

import pytest
from django.urls import reverse

import queues.admin.tags as admin_tags
from queues.api import Job, JobOutcome, JobPriority
from queues.reads.listing import JobFilter, list_jobs

pytestmark = pytest.mark.django_db
EVIL = "<script>alert('x')</script>"


def _ids(html: str, ids) -> list:
    """Which of `ids` the page shows, in the order it shows them."""
    found = [(html.find(str(i)), i) for i in ids if str(i) in html]
    return [i for _, i in sorted(found)]


def test_the_queue_page_filters_by_tag_newest_first(engine, qname, viewer_client):
    eu = [engine.enqueue(Job(queue_name=qname, tags=["eu", "billing"])) for _ in range(3)]
    engine.enqueue(Job(queue_name=qname, tags=["us"]))
    engine.enqueue(Job(queue_name=qname))
    engine.enqueue(Job(queue_name=f"{qname}-other", tags=["eu"]))
    url = reverse("dashboard:queue", args=[qname])
    html = viewer_client.get(url, {"tag": "eu"}).content.decode()
    shown = [str(job.id) for job in list_jobs(JobFilter(qname, tag="eu")).jobs]
    assert shown == [str(i) for i in reversed(eu)]
    assert all(str(i)[:8] in html for i in eu)
    assert html.count('class="pill s-') == 3, "only the tagged jobs of this queue"
    assert 'name="tag" value="eu"' in html and ">Clear</a>" in html
    nothing = viewer_client.get(url, {"tag": "nobody-has-this"}).content.decode()
    assert "No job matches these filters" in nothing


def test_the_tag_filter_pages_with_a_cursor_and_combines_with_the_others(engine, qname):
    ids = [engine.enqueue(Job(queue_name=qname, tags=["eu"], payload={"n": n})) for n in range(5)]
    engine.enqueue(Job(queue_name=qname, tags=["eu"], priority=JobPriority.HIGH))
    first = list_jobs(JobFilter(qname, tag="eu", priority=JobPriority.NORMAL), size=2)
    assert [j.id for j in first.jobs] == [ids[4], ids[3]] and first.next_cursor
    second = list_jobs(JobFilter(qname, tag="eu", priority=2), first.next_cursor, size=2)
    assert [j.id for j in second.jobs] == [ids[2], ids[1]]
    done = engine.dequeue_one(qname)  # the High one
    engine.finish_job_run(done, JobOutcome.completed())
    assert [j.id for j in list_jobs(JobFilter(qname, "Completed", tag="eu")).jobs] == [done.id]
    found = list_jobs(JobFilter(qname, tag="eu", search='"n": 3'))
    assert [j.id for j in found.jobs] == [ids[3]] and found.search_window


def test_tags_show_escaped_on_the_rows_and_the_job_page_with_the_meta(engine, qname, viewer_client):
    job_id = engine.enqueue(Job(queue_name=qname, tags=[EVIL, "eu"], meta={"note": EVIL}))
    queue_html = viewer_client.get(reverse("dashboard:queue", args=[qname])).content.decode()
    job_html = viewer_client.get(reverse("dashboard:job", args=[job_id])).content.decode()
    for html in (queue_html, job_html):
        assert EVIL not in html and "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in html
        assert 'class="tag"' in html and "?tag=eu" in html
    assert "<h2>Meta</h2>" in job_html and "&quot;note&quot;" in job_html
    plain = engine.enqueue(Job(queue_name=qname))
    assert (
        "<h2>Meta</h2>"
        not in viewer_client.get(reverse("dashboard:job", args=[plain])).content.decode()
    )


@pytest.mark.parametrize("junk", ["x" * 101, "a\x00b", " eu ", "%", "eu\u200b", "%ZZ"])
def test_a_tag_no_job_can_have_finds_nothing_and_no_error(engine, qname, viewer_client, junk):
    engine.enqueue(Job(queue_name=qname, tags=["eu"]))
    response = viewer_client.get(reverse("dashboard:queue", args=[qname]), {"tag": junk})
    assert response.status_code in (200, 400)
    if response.status_code == 200 and junk.strip() != "eu":
        assert "No job matches these filters" in response.content.decode()


# The admin ------------------------------------------------------------------------------------
def test_the_admin_filters_by_tag_newest_first_and_shows_tags_and_meta(
    engine, qname, superuser_client
):
    eu = [engine.enqueue(Job(queue_name=qname, tags=["eu"], meta={"n": n})) for n in range(3)]
    us = engine.enqueue(Job(queue_name=qname, tags=["us"]))
    url = reverse("admin:queues_job_changelist")
    response = superuser_client.get(url, {"tag": "eu", "queue_name": qname})
    html = response.content.decode()
    assert response.status_code == 200
    assert _ids(html, [*eu, us]) == list(reversed(eu))
    assert 'name="tag" value="eu"' in html and 'name="queue_name" value="' in html
    assert [j.id for j in response.context["cl"].result_list] == list(reversed(eu))
    dead = engine.dequeue_one(qname)
    engine.mark_job_dead(dead.id)
    both = superuser_client.get(url, {"tag": "eu", "status__exact": "Dead"})
    assert [j.id for j in both.context["cl"].result_list] == [dead.id]
    sorted_by_id = superuser_client.get(url, {"tag": "eu", "o": "1"})
    assert len(sorted_by_id.context["cl"].result_list) == 3
    change = superuser_client.get(reverse("admin:queues_job_change", args=[eu[2]]))
    assert "meta" in change.content.decode() and "&quot;n&quot;: 2" in change.content.decode()


def test_the_admin_tag_filter_reads_the_tags_index_order(engine, qname, superuser_client):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    engine.enqueue(Job(queue_name=qname, tags=["eu"]))
    with CaptureQueriesContext(connection) as seen:
        superuser_client.get(reverse("admin:queues_job_changelist"), {"tag": "eu"})
    listed = [
        q["sql"]
        for q in seen.captured_queries
        if "ORDER BY" in q["sql"] and "queues_jobtag" in q["sql"]
    ]
    assert listed and all("queues_jobtag" in sql.split("ORDER BY")[1] for sql in listed)
    assert all(sql.count("JOIN") == 1 for sql in listed), "one join, the filter's"


def test_the_admin_counts_no_further_than_its_cap(engine, qname, superuser_client, monkeypatch):
    monkeypatch.setattr(admin_tags, "COUNT_CAP", 2)
    engine.enqueue_many([Job(queue_name=qname, tags=["eu"]) for _ in range(3)])
    url = reverse("admin:queues_job_changelist")
    response = superuser_client.get(url, {"tag": "eu"})
    assert response.context["cl"].result_count == 2
    assert "2+ jobs" in response.content.decode()
    exact = superuser_client.get(url, {"tag": "eu", "queue_name": f"{qname}-none"})
    assert exact.context["cl"].result_count == 0


@pytest.mark.parametrize("junk", ["x" * 101, "a\x00b", " ", "eu\u200b", "%ZZ"])
def test_junk_in_the_admin_tag_filter_finds_nothing_and_no_error(
    engine, qname, superuser_client, junk
):
    engine.enqueue(Job(queue_name=qname, tags=["eu"]))
    response = superuser_client.get(reverse("admin:queues_job_changelist"), {"tag": junk})
    assert response.status_code in (200, 400)
    if response.status_code == 200 and junk.strip():
        assert list(response.context["cl"].result_list) == []
