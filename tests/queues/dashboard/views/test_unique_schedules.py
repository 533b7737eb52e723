"""Unique keys and declared schedules where an operator looks for them: the job page, the
recurring page (and its actions) and the admin."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse

from queues.api import Job, JobOutcome
from queues.models import Job as JobRow
from queues.schedules import parse
from tests.queues.dashboard.views.conftest import HTMX

pytestmark = pytest.mark.django_db
EVIL = "<script>alert('x')</script>"


def _declare(engine, name: str, queue: str, **fields):
    engine.sync_schedules([parse(name, {"queue": queue, "cron": "0 3 * * *", **fields})])
    return JobRow.objects.get(schedule_name=name)


def test_the_job_page_shows_the_key_and_whether_it_is_held(engine, qname, viewer_client):
    job_id = engine.enqueue(
        Job(queue_name=qname, unique_key="invoice:42", unique_period=timedelta(hours=1))
    )
    url = reverse("dashboard:job", args=[job_id])
    html = viewer_client.get(url).content.decode()
    assert "Unique key" in html and "invoice:42" in html
    assert "held: while Pending, Running, Retrying, or until" in html
    engine.finish_job_run(engine.dequeue_one(qname), JobOutcome.completed())
    JobRow.objects.filter(id=job_id).update(
        created_at=JobRow.objects.get(id=job_id).created_at - timedelta(hours=2)
    )
    assert "no longer held" in viewer_client.get(url).content.decode()
    plain = engine.enqueue(Job(queue_name=qname))
    assert (
        "Unique key"
        not in viewer_client.get(reverse("dashboard:job", args=[plain])).content.decode()
    )


def test_the_job_page_shows_a_declared_schedule(engine, qname, viewer_client):
    row = _declare(engine, f"{qname}-nightly", qname)
    url = reverse("dashboard:job", args=[row.id])
    html = viewer_client.get(url).content.decode()
    assert "declared in code" in html and f"{qname}-nightly" in html
    engine.sync_schedules([])
    assert "removed from the settings" in viewer_client.get(url).content.decode()


def test_the_recurring_page_marks_the_declared_schedules(engine, qname, viewer_client):
    declared = _declare(engine, f"{qname}-report", qname)
    enqueued = Job(queue_name=qname, cron_schedule="0 0 * * * *")
    engine.enqueue(enqueued)
    html = viewer_client.get(reverse("dashboard:recurring")).content.decode()
    row = html[html.index(str(declared.id)[:8]) :]
    assert "declared in code" in row[: row.index("</tr>")] and f"{qname}-report" in row
    other = html[html.index(str(enqueued.id)[:8]) :]
    assert "enqueued" in other[: other.index("</tr>")]
    assert '<code>HAMMERWEB["SCHEDULES"]</code>' in html


def test_names_and_keys_are_escaped(engine, qname, viewer_client):
    row = _declare(engine, EVIL, qname)
    keyed = engine.enqueue(Job(queue_name=qname, unique_key=EVIL))
    for url in (
        reverse("dashboard:recurring"),
        reverse("dashboard:job", args=[row.id]),
        reverse("dashboard:job", args=[keyed]),
    ):
        html = viewer_client.get(url).content.decode()
        assert "<script>alert" not in html and "&lt;script&gt;" in html, url


def test_an_operator_disables_a_declared_schedule_and_a_sync_keeps_it_so(
    engine, qname, viewer_client, csrf_client
):
    row = _declare(engine, f"{qname}-nightly", qname)
    url = reverse("dashboard:recurring-disable", args=[row.id])
    assert viewer_client.post(url, headers=HTMX).status_code == 403
    assert csrf_client.post(url, headers=HTMX).status_code == 403, "no CSRF token"
    page = csrf_client.get(reverse("dashboard:recurring"))
    token = page.cookies["csrftoken"].value
    assert csrf_client.post(url, headers={**HTMX, "X-CSRFToken": token}).status_code == 200
    assert JobRow.objects.get(id=row.id).recurring is False
    report = engine.sync_schedules(
        [parse(f"{qname}-nightly", {"queue": qname, "cron": "0 3 * * *"})]
    )
    assert report.unchanged == [f"{qname}-nightly"]
    assert JobRow.objects.get(id=row.id).recurring is False


def test_the_admin_searches_keys_and_names_and_filters_declared(engine, qname, superuser_client):
    keyed = engine.enqueue(Job(queue_name=qname, unique_key="invoice:4242"))
    row = _declare(engine, f"{qname}-sched", qname)
    plain = engine.enqueue(Job(queue_name=qname))
    changelist = reverse("admin:queues_job_changelist")
    html = superuser_client.get(changelist, {"q": "invoice:4242"}).content.decode()
    assert str(keyed) in html and str(plain) not in html
    html = superuser_client.get(changelist, {"q": f"{qname}-sched"}).content.decode()
    assert str(row.id) in html and str(keyed) not in html
    html = superuser_client.get(changelist, {"declared": "yes"}).content.decode()
    assert str(row.id) in html and str(keyed) not in html
    engine.sync_schedules([])
    html = superuser_client.get(changelist, {"declared": "removed"}).content.decode()
    assert str(row.id) in html
    page = superuser_client.get(reverse("admin:queues_job_change", args=[keyed])).content.decode()
    assert "invoice:4242" in page
