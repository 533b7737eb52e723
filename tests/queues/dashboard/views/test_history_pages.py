"""The history page (charts and percentiles), "Run now" of a recurring job and its next
runs, and the pause of the live updates: login, permissions (403), CSRF, escaping."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from queues.api import JobOutcome, JobStatus
from queues.engine.recurring import RUN_NOW_OF
from queues.models import Job as JobRow
from tests.queues.dashboard.views.conftest import HTMX, enqueue, poll

pytestmark = pytest.mark.django_db


def complete(engine, queue: str, n: int = 1) -> None:
    for _ in range(n):
        enqueue(engine, queue)
        engine.finish_job_run(engine.dequeue_one(queue), JobOutcome.completed())


@pytest.mark.parametrize("window", ["1h", "24h", "7d"])
def test_the_history_page_draws_each_queue_as_an_svg_chart(viewer_client, engine, qname, window):
    complete(engine, qname, 3)
    enqueue(engine, qname, max_attempts=1)
    engine.finish_job_run(engine.dequeue_one(qname), JobOutcome.failed("boom"))
    response = viewer_client.get(reverse("dashboard:history"), {"window": window})
    assert response.status_code == 200
    text = response.content.decode()
    section = text[text.index(f'data-queue="{qname}"') :]
    assert '<svg class="chart"' in section and 'role="img"' in section
    assert re.search(r"<title>[^<]*: 3 completed, 1 failed, 0 retried</title>", section)
    assert "3 completed, 1 failed, 0 retried; at most 4" in section  # the chart's label
    assert "p95" in section and "Run time" in section


def test_the_history_of_one_queue_and_junk_windows(viewer_client, engine, qname):
    complete(engine, qname)
    url = reverse("dashboard:history")
    one = viewer_client.get(url, {"queue": qname, "window": "nonsense"}).content.decode()
    assert one.count('<svg class="chart"') == 1 and 'aria-current="page">24h' in one
    none = viewer_client.get(url, {"queue": "no-such-queue"}).content.decode()
    assert "No queue named" in none and '<svg class="chart"' not in none


def test_the_history_page_escapes_queue_names(viewer_client, engine):
    name = '<script>alert("q")</script>'
    complete(engine, name)
    text = viewer_client.get(reverse("dashboard:history")).content.decode()
    assert name not in text
    assert "&lt;script&gt;alert(&quot;q&quot;)&lt;/script&gt;" in text


def test_the_history_page_needs_a_staff_login(client):
    response = client.get(reverse("dashboard:history"))
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_the_history_region_is_redrawn_on_its_own(viewer_client, engine, qname):
    complete(engine, qname)
    response = viewer_client.get(reverse("dashboard:history"), headers=poll("history-live"))
    text = response.content.decode()
    assert text.lstrip().startswith('<div id="history-live"') and "<html" not in text
    assert "every 30s" in text and "data-live-paused" in text


def test_run_now_enqueues_one_copy_and_leaves_the_schedule(operator_client, engine, qname):
    cron = enqueue(
        engine, qname, cron_schedule="0 0 3 * * *", timezone="Europe/Paris", tags=["nightly"]
    )
    response = operator_client.post(
        reverse("dashboard:recurring-run-now", args=[cron.id]), headers=HTMX
    )
    assert response.status_code == 200 and "runs now as job" in response.content.decode()
    after = engine.get_job(cron.id)
    assert after.next_run_at == cron.next_run_at and after.recurring
    copy = JobRow.objects.get(queue_name=qname, cron_schedule__isnull=True)
    assert copy.status == JobStatus.PENDING and copy.scheduled_at <= after.next_run_at
    assert copy.payload == cron.payload and copy.tags == ["nightly"]
    assert copy.meta[RUN_NOW_OF] == str(cron.id) and copy.meta["run_now_by"] == "operator"
    # Its page links back to the recurring job.
    page = operator_client.get(reverse("dashboard:job", args=[copy.id])).content.decode()
    assert reverse("dashboard:job", args=[cron.id]) in page


def test_run_now_of_a_job_that_does_not_recur_is_refused_in_place(operator_client, engine, qname):
    plain = enqueue(engine, qname)
    response = operator_client.post(
        reverse("dashboard:recurring-run-now", args=[plain.id]), headers=HTMX
    )
    assert response.status_code == 200 and "notice-error" in response.content.decode()
    assert JobRow.objects.filter(queue_name=qname).count() == 1


def test_run_now_needs_the_add_permission(engine, qname, operator):
    from django.contrib.auth.models import Permission
    from django.test import Client

    operator.user_permissions.remove(Permission.objects.get(codename="add_job"))
    client = Client()
    client.force_login(operator)
    cron = enqueue(engine, qname, cron_schedule="0 0 3 * * *")
    url = reverse("dashboard:recurring-run-now", args=[cron.id])
    assert client.post(url, headers=HTMX).status_code == 403
    assert JobRow.objects.filter(queue_name=qname).count() == 1
    assert url not in client.get(reverse("dashboard:recurring")).content.decode()


def test_the_next_five_runs_in_the_schedules_time_zone(viewer_client, engine, qname):
    cron = enqueue(engine, qname, cron_schedule="0 0 3 * * *", timezone="Europe/Paris")
    page = viewer_client.get(reverse("dashboard:job", args=[cron.id])).content.decode()
    # In UTC as every time on the dashboard, and in the schedule's zone beside it.
    run = (
        r"<li><time [^>]+>(\d{4}-\d\d-\d\d 0[12]:00:00 UTC)</time> "
        r"<span class=\"local\">· 03:00:00 CES?T"
    )
    runs = re.findall(run, page)
    assert len(runs) == 5 and len(set(runs)) == 5
    listing = viewer_client.get(reverse("dashboard:recurring")).content.decode()
    assert len(re.findall(run, listing)) == 5
    # No Run now button for who may not add jobs.
    assert reverse("dashboard:recurring-run-now", args=[cron.id]) not in listing


def test_the_next_runs_of_a_disabled_job_are_not_shown(viewer_client, engine, qname):
    cron = enqueue(engine, qname, cron_schedule="0 0 3 * * *")
    engine.disable_recurring_job(cron.id)
    page = viewer_client.get(reverse("dashboard:job", args=[cron.id])).content.decode()
    assert "Next runs" not in page


def test_every_page_offers_the_pause_of_live_updates(viewer_client):
    text = viewer_client.get(reverse("dashboard:overview")).content.decode()
    assert 'id="live-toggle"' in text and 'aria-pressed="false"' in text
    assert "!document.body.hasAttribute(&#x27;data-live-paused&#x27;)" in text
