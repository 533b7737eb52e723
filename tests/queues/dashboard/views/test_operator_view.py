"""The operator's view, server side: the "all matching" bar names what it acts on, its
confirmation comes as a modal dialog (a page of its own without JavaScript), a finished
operation tells the page's lists to redraw, and every time a page writes names its zone."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.urls import reverse

from queues.api import JobOutcome, JobStatus
from queues.ops import bulk
from queues.reads.search import SearchFilter
from tests.queues.dashboard.views.conftest import HTMX, enqueue, make_dead

pytestmark = pytest.mark.django_db
JOBS = reverse("dashboard:jobs")
CONFIRM = reverse("dashboard:bulk-confirm")


def _bar(html: str) -> str:
    return re.search(r'<form class="bulk-all".*?</form>', html, re.S).group(0)


def test_the_bar_of_a_queue_page_says_it_acts_on_this_queue(operator_client, engine, qname):
    make_dead(engine, qname)
    url = reverse("dashboard:queue", args=[qname])
    bar = _bar(operator_client.get(url).content.decode())
    assert "With every job of this queue:" in bar and "every job of every queue" not in bar
    bar = _bar(operator_client.get(url, {"status": JobStatus.DEAD}).content.decode())
    assert "With every job of this queue that matches:" in bar
    bar = _bar(operator_client.get(JOBS).content.decode())
    assert "With every job that matches (no filter: every job of every queue):" in bar
    bar = _bar(operator_client.get(JOBS, {"queue": qname}).content.decode())
    assert "With every job that matches:" in bar


def test_the_confirmation_is_a_modal_dialog_and_without_javascript_a_page(
    operator_client, engine, qname
):
    for _ in range(2):
        make_dead(engine, qname)
    form = {"action": "delete", "fixed_queue": qname}
    html = operator_client.post(CONFIRM, form, headers=HTMX).content.decode()
    dialog = re.search(r"<dialog [^>]*>", html).group(0)
    assert "data-modal" in dialog and " open" not in dialog and "destructive" in dialog
    assert re.search(r"<button [^>]*data-dialog-close autofocus>No, leave them</button>", html)
    assert ">Yes, delete 2 jobs</button>" in html and "cannot be undone" in html
    # Without htmx: the confirmation is the page, shown at once; "No" goes back where it came
    # from, when that is this site, and to the overview otherwise.
    queue_page = reverse("dashboard:queue", args=[qname])
    page = operator_client.post(CONFIRM, form, headers={"referer": queue_page}).content.decode()
    assert re.search(r"<dialog [^>]*open>", page)
    assert f'<a class="button" href="{queue_page}">No, leave them</a>' in page
    away = operator_client.post(CONFIRM, form, headers={"referer": "https://evil.example/"})
    assert 'href="https://evil.example/"' not in away.content.decode()


def test_a_finished_operation_tells_the_lists_to_redraw(operator_client, engine, qname):
    ids = [make_dead(engine, qname).id for _ in range(3)]
    op = bulk.start(SearchFilter.from_query({"queue": qname}), "retry", "operator")
    url = reverse("dashboard:bulk-operation", args=[op.pk])
    waiting = operator_client.get(url, headers=HTMX)
    assert waiting.status_code == 200 and "HX-Trigger" not in waiting.headers
    bulk.BulkRunner(engine, budget=timedelta(0)).run_once()
    done = operator_client.get(url, headers=HTMX)
    assert done.headers["HX-Trigger"] == "refresh"
    assert 'data-status="completed"' in done.content.decode()
    assert {engine.get_job(i).status for i in ids} == {JobStatus.PENDING}
    # The jobs page's list listens for it (and is not polled: a search is a bounded scan).
    html = operator_client.get(JOBS, {"queue": qname}).content.decode()
    region = re.search(r'<div id="jobs-list" [^>]*>', html).group(0)
    assert 'hx-trigger="refresh from:body"' in region and "every" not in region
    partial = operator_client.get(
        JOBS, {"queue": qname}, headers={**HTMX, "HX-Target": "jobs-list"}
    )
    assert partial.content.decode().count(">Pending</span>") == 3


#: A clock time ("14:30", "14:30:05") that no zone follows.
BARE_TIME = re.compile(r"(?<![\d:T])\d\d:\d\d(?::\d\d)?(?![\d:]|Z| UTC| [A-Z]{3,4}\b)")


def _visible(html: str) -> str:
    """The page's text and its titles, without its scripts and machine attributes."""
    html = re.sub(r"<script.*?</script>", "", html, flags=re.S)
    return re.sub(r'(datetime|hx-[a-z]+|ws-connect|value)="[^"]*"', "", html)


def test_every_time_the_pages_write_names_its_zone(operator_client, engine, qname):
    cron = enqueue(engine, qname, cron_schedule="0 0 3 * * *", timezone="Europe/Paris")
    dead = make_dead(engine, qname)
    enqueue(engine, qname)
    running = engine.dequeue_one(qname)
    enqueue(engine, qname)
    engine.finish_job_run(engine.dequeue_one(qname), JobOutcome.completed())
    engine.pause_queue(qname, paused_by="alice", reason="deploy")
    operator_client.post(reverse("dashboard:run-reaper"), headers=HTMX)
    urls = [
        reverse("dashboard:overview"),
        reverse("dashboard:queue", args=[qname]),
        reverse("dashboard:job", args=[cron.id]),
        reverse("dashboard:job", args=[dead.id]),
        reverse("dashboard:job", args=[running.id]),
        JOBS + f"?queue={qname}",
        reverse("dashboard:recurring"),
        reverse("dashboard:reaper"),
        reverse("dashboard:workers"),
        reverse("dashboard:history") + "?window=24h",
        reverse("dashboard:batches"),
    ]
    for url in urls:
        html = operator_client.get(url).content.decode()
        assert BARE_TIME.findall(_visible(html)) == [], url
    # The admin's list of a job's attempts writes its times the same way.
    failed = enqueue(engine, qname + "-f", max_attempts=1)
    engine.finish_job_run(engine.dequeue_one(qname + "-f"), JobOutcome.failed("boom"))
    admin = operator_client.get(reverse("admin:queues_job_change", args=[failed.id]))
    assert re.search(
        r"<td><time datetime=\"[^\"]+Z\">[^<]+ UTC</time></td>", admin.content.decode()
    )
    page = operator_client.get(reverse("dashboard:job", args=[cron.id])).content.decode()
    times = re.findall(r'<time datetime="([^"]+)">([^<]+)</time>', page)
    assert len(times) >= 7  # queued, scheduled, five next runs
    for iso, text in times:
        assert iso.endswith("Z") and text.endswith(" UTC") and iso[:10] == text[:10]
    scheduled = re.search(r"<dt>Scheduled</dt><dd>(.*?)</dd>", page).group(1)
    assert " UTC</time>" in scheduled
    # Each next run in UTC, and in the schedule's zone beside it (03:00 in Paris).
    runs = re.findall(
        r"<li><time [^>]+>[^<]+ UTC</time> <span class=\"local\">· ([^<]+)</span>", page
    )
    assert len(runs) == 5 and all(re.fullmatch(r"03:00:00 CES?T", run) for run in runs)


def test_a_utc_schedule_is_written_once(viewer_client, engine, qname):
    cron = enqueue(engine, qname, cron_schedule="0 0 3 * * *")
    page = viewer_client.get(reverse("dashboard:job", args=[cron.id])).content.decode()
    assert len(re.findall(r"<li><time [^>]+>\d{4}-\d\d-\d\d 03:00:00 UTC</time> <span", page)) == 5
    assert 'class="local"' not in page
