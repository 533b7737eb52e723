"""Every page and every live partial: who may see it, what it shows, and escaping."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from queues.api import Job, JobBatch, JobGroup, JobStatus
from queues.models import QueuePause, ReaperRun, WorkerProcess
from tests.queues.dashboard.views.conftest import enqueue, make_dead, poll

pytestmark = pytest.mark.django_db

EVIL = "<script>alert('x')</script>"


@pytest.fixture
def pages(engine, qname):
    """One URL of each page (and the id of its live region), with data behind it."""
    job = make_dead(engine, qname)
    batch = engine.enqueue_batch(JobBatch("nightly", jobs=[Job(queue_name=qname)]))
    group = JobGroup("signup")
    group.add_job(Job(queue_name=qname)).then(Job(queue_name=qname))
    workflow = engine.enqueue_workflow(group)
    return [
        (reverse("dashboard:overview"), "overview-live"),
        (reverse("dashboard:queue", args=[qname]), "queue-live"),
        (reverse("dashboard:queue", args=[qname]), "queue-jobs"),
        (reverse("dashboard:job", args=[job.id]), "job-live"),
        (reverse("dashboard:reaper"), "reaper-live"),
        (reverse("dashboard:batches"), "groups-live"),
        (reverse("dashboard:batch", args=[batch]), "group-live"),
        (reverse("dashboard:workflow", args=[workflow]), "group-live"),
        (reverse("dashboard:recurring"), "recurring-live"),
        (reverse("dashboard:workers"), "workers-live"),
    ]


def test_every_page_and_partial_needs_a_staff_login(pages, client):
    plain = Client()
    plain.force_login(User.objects.create_user("plain"))
    for url, target in pages:
        for who in (client, plain):
            response = who.get(url, headers=poll(target))
            assert response.status_code == 302, url
            assert response["Location"].startswith(reverse("admin:login")), url


def test_every_page_renders_whole_and_as_its_live_partial(pages, viewer_client):
    for url, target in pages:
        page = viewer_client.get(url)
        assert page.status_code == 200, url
        assert b"<html" in page.content and f'id="{target}"'.encode() in page.content, url
        partial = viewer_client.get(url, headers=poll(target))
        assert partial.status_code == 200, url
        text = partial.content.decode()
        assert "<html" not in text, url
        assert text.lstrip().startswith(f'<div id="{target}"'), url
        # The partial carries its own poll, so polling goes on after the swap.
        assert 'hx-trigger="every 2s [document.visibilityState === &#x27;visible&#x27;' in text


def test_an_htmx_request_for_another_target_gets_the_whole_page(viewer_client):
    response = viewer_client.get(reverse("dashboard:overview"), headers=poll("nope"))
    assert b"<html" in response.content


def test_overview_shows_counts_per_queue_and_totals(engine, qname, viewer_client):
    for _ in range(3):
        enqueue(engine, qname)
    make_dead(engine, qname)
    html = viewer_client.get(reverse("dashboard:overview")).content.decode()
    row = html[html.index(f'data-queue="{qname}"') :]
    row = row[: row.index("</tr>")]
    assert 'data-status="Pending" title="3">3<' in row
    assert 'data-status="Dead" title="1">1<' in row
    assert "Oldest pending" in html


def test_overview_counts_are_exact_and_formatted(engine, qname, viewer_client):
    engine.enqueue_many([Job(queue_name=qname) for _ in range(1234)])
    html = viewer_client.get(reverse("dashboard:overview")).content.decode()
    assert 'data-status="Pending" title="1234">1.2k<' in html


def test_overview_shows_who_paused_a_queue(engine, qname, viewer_client):
    enqueue(engine, qname)
    engine.pause_queue(qname, paused_by="alice", reason="deploy")
    html = viewer_client.get(reverse("dashboard:overview")).content.decode()
    assert "Paused by alice" in html


def test_overview_lists_a_paused_queue_without_jobs(engine, qname, viewer_client):
    engine.pause_queue(qname, paused_by="alice")
    assert qname in viewer_client.get(reverse("dashboard:overview")).content.decode()


def test_overview_sparkline_counts_completions_of_full_minutes(qname, viewer_client):
    from queues.api import JobOutcome, JobQueue, MockClock

    # A minute ago: in a full minute by the time the page reads (the open one is not shown).
    engine = JobQueue(clock=MockClock(timezone.now() - timedelta(minutes=1)))
    enqueue(engine, qname)
    engine.finish_job_run(engine.dequeue_one(qname), JobOutcome.completed())
    html = viewer_client.get(reverse("dashboard:overview")).content.decode()
    row = html[html.index(f'data-queue="{qname}"') :]
    assert 'aria-label="1 completed in the last 30 full minutes"' in row[: row.index("</tr>")]
    assert "Jobs completed in the last full minute, " in html


def test_empty_overview_says_how_to_start(viewer_client):
    html = viewer_client.get(reverse("dashboard:overview")).content.decode()
    assert "No jobs yet" in html and "runworker" in html


def test_viewer_sees_no_action_buttons(engine, qname, viewer_client):
    job = make_dead(engine, qname)
    for url in (
        reverse("dashboard:overview"),
        reverse("dashboard:queue", args=[qname]),
        reverse("dashboard:job", args=[job.id]),
        reverse("dashboard:reaper"),
    ):
        html = viewer_client.get(url).content.decode()
        assert "hx-post" not in html, url


def test_operator_sees_the_buttons(engine, qname, operator_client):
    job = make_dead(engine, qname)
    assert "Pause" in operator_client.get(reverse("dashboard:overview")).content.decode()
    html = operator_client.get(reverse("dashboard:job", args=[job.id])).content.decode()
    assert "Retry now" in html and "Delete" in html and "Cancel" not in html
    assert "Run reaper now" in operator_client.get(reverse("dashboard:reaper")).content.decode()


def test_user_data_is_escaped_everywhere(engine, viewer_client):
    queue = f"q{EVIL}"
    job = enqueue(engine, queue, payload={"html": EVIL})
    engine.mark_job_dead(job.id, EVIL)
    engine.pause_queue(queue, paused_by=EVIL, reason=EVIL)
    for url in (
        reverse("dashboard:overview"),
        reverse("dashboard:queue", args=[queue]),
        reverse("dashboard:job", args=[job.id]),
        reverse("dashboard:recurring"),
    ):
        html = viewer_client.get(url).content.decode()
        assert "<script>alert" not in html, url
    html = viewer_client.get(reverse("dashboard:job", args=[job.id])).content.decode()
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in html


def test_queue_page_filters_by_status_and_priority(engine, qname, viewer_client):
    pending = enqueue(engine, qname, priority=4)
    dead = make_dead(engine, qname)
    url = reverse("dashboard:queue", args=[qname])
    html = viewer_client.get(url, {"status": "Dead"}).content.decode()
    assert str(dead.id) in html and str(pending.id) not in html
    html = viewer_client.get(url, {"priority": "4"}).content.decode()
    assert str(pending.id) in html and str(dead.id) not in html


def test_queue_page_searches_payload_text_and_id(engine, qname, viewer_client):
    wanted = enqueue(engine, qname, payload={"to": "needle@example.com"})
    other = enqueue(engine, qname, payload={"to": "hay@example.com"})
    url = reverse("dashboard:queue", args=[qname])
    html = viewer_client.get(url, {"q": "NEEDLE"}).content.decode()
    assert str(wanted.id) in html and str(other.id) not in html
    html = viewer_client.get(url, {"q": str(other.id)}).content.decode()
    assert str(other.id) in html and str(wanted.id) not in html


def test_queue_page_pages_with_a_cursor(engine, qname, viewer_client, monkeypatch):
    from queues.reads import listing

    monkeypatch.setattr(listing, "PAGE_SIZE", 2)
    ids = [enqueue(engine, qname).id for _ in range(5)]
    url = reverse("dashboard:queue", args=[qname])
    seen = []
    page = viewer_client.get(url)
    while True:
        seen += [i for i in ids if str(i) in page.content.decode()]
        cursor = page.context["page"].next_cursor
        if not cursor:
            break
        page = viewer_client.get(url, {"after": cursor})
    assert sorted(seen) == sorted(ids) and len(seen) == 5


def test_unknown_queue_and_job_are_404(viewer_client):
    assert viewer_client.get(reverse("dashboard:queue", args=["nope"])).status_code == 404
    assert viewer_client.get(reverse("dashboard:job", args=[uuid.uuid4()])).status_code == 404


def test_job_page_shows_lease_of_a_running_job(engine, qname, viewer_client):
    enqueue(engine, qname)
    job = engine.dequeue_one(qname)
    html = viewer_client.get(reverse("dashboard:job", args=[job.id])).content.decode()
    assert "Lease until" in html and "Last heartbeat" in html


def test_job_page_links_workflow_and_dependencies(engine, qname, viewer_client):
    first, second = Job(queue_name=qname), Job(queue_name=qname)
    group = JobGroup("chain")
    group.add_job(first).then(second)
    workflow = engine.enqueue_workflow(group)
    html = viewer_client.get(reverse("dashboard:job", args=[second.id])).content.decode()
    assert reverse("dashboard:workflow", args=[workflow]) in html
    assert reverse("dashboard:job", args=[first.id]) in html


def test_reaper_page_lists_runs_and_expired_leases(engine, qname, viewer_client):
    enqueue(engine, qname)
    job = engine.dequeue_one(qname)
    Job.objects.filter(id=job.id).update(lease_expires_at=timezone.now() - timedelta(minutes=1))
    ReaperRun.objects.create(ran_by="worker-7", requeued_ids=[str(uuid.uuid4())])
    html = viewer_client.get(reverse("dashboard:reaper")).content.decode()
    assert str(job.id)[:8] in html and "worker-7" in html


def test_recurring_page_lists_cron_jobs(engine, qname, viewer_client):
    job = enqueue(engine, qname, cron_schedule="0 */5 * * * *", timezone="Europe/Paris")
    html = viewer_client.get(reverse("dashboard:recurring")).content.decode()
    assert "0 */5 * * * *" in html and "Europe/Paris" in html and str(job.id)[:8] in html


def test_workers_page_marks_stale_workers(viewer_client):
    now = timezone.now()
    WorkerProcess.objects.create(hostname="fresh-host", pid=1, queues=["a"], last_heartbeat_at=now)
    WorkerProcess.objects.create(
        hostname="old-host", pid=2, queues=["a"], last_heartbeat_at=now - timedelta(minutes=5)
    )
    html = viewer_client.get(reverse("dashboard:workers")).content.decode()
    old = html[html.index("old-host") :]
    fresh = html[html.index("fresh-host") :]
    assert "stale</span>" in old[: old.index("</tr>")]
    assert "stale</span>" not in fresh[: fresh.index("</tr>")]


def test_batch_page_shows_progress(engine, qname, viewer_client):
    batch = engine.enqueue_batch(JobBatch("import", jobs=[Job(queue_name=qname)] * 1))
    html = viewer_client.get(reverse("dashboard:batches")).content.decode()
    assert "import" in html and 'class="progress"' in html
    html = viewer_client.get(reverse("dashboard:batch", args=[batch])).content.decode()
    assert "0 ✓ · 0 ✗ · 1 left of 1" in html


def test_pause_badge_is_on_the_queue_page(engine, qname, viewer_client):
    enqueue(engine, qname)
    QueuePause.objects.create(queue_name=qname, paused_by="bob")
    html = viewer_client.get(reverse("dashboard:queue", args=[qname])).content.decode()
    assert "Paused by bob" in html
    assert JobStatus.PENDING in html
