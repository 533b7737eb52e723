"""The error history on the job's page (a timeline, newest first, its own live region) and
in the admin; and the dashboard's cancel of a running job, which says who cancelled it
and why."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from queues.api import DequeueOptions, JobOutcome, JobQueue, JobStatus
from queues.enums import HandlerEnd
from queues.models import WorkerProcess
from queues.reads.timeline import SHOWN
from tests.queues.dashboard.views.conftest import HTMX, enqueue, poll

pytestmark = pytest.mark.django_db
EVIL = "<script>alert('x')</script>"


def failed_twice(engine: JobQueue, qname: str):
    """A job whose two runs failed: a ValueError, then an error full of markup."""
    job = enqueue(engine, qname, max_attempts=2)
    for error, trace, kind in (
        ("ValueError: first", "Traceback (most recent call last):\nValueError: first", "a.B"),
        (f"Bad {EVIL}", f"Traceback {EVIL}", f"evil.{EVIL}"),
    ):
        engine.retry_job(job.id)  # due now, whatever the backoff
        (run,) = engine.dequeue(qname, DequeueOptions.batch(1))
        engine.finish_job_run(run, JobOutcome.failed(error, traceback=trace, exception_class=kind))
    return job


def test_the_job_page_shows_each_failed_attempt_newest_first(engine, qname, viewer_client):
    job = failed_twice(engine, qname)
    html = viewer_client.get(reverse("dashboard:job", args=[job.id])).content.decode()
    section = html[html.index('id="job-attempts"') :]
    assert section.index("#2") < section.index("#1"), "newest first"
    assert "ValueError: first" in section and "<summary>Traceback</summary>" in section
    assert "a.B" in section and "then Pending" in section and "then Dead" in section
    assert EVIL not in html and "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in section
    # The region stands down while a traceback is open.
    assert "querySelector(&#x27;details[open]&#x27;)" in section


def test_the_attempts_region_is_its_own_partial(engine, qname, viewer_client):
    job = failed_twice(engine, qname)
    url = reverse("dashboard:job", args=[job.id])
    html = viewer_client.get(url, headers=poll("job-attempts")).content.decode()
    assert html.lstrip().startswith('<section id="job-attempts"') and "ValueError: first" in html
    live = viewer_client.get(url, headers=poll("job-live")).content.decode()
    assert 'id="job-attempts"' not in live and "ValueError: first" not in live
    assert "Bad &lt;script&gt;" in live  # the job's last error


def test_a_job_without_failures_says_so(engine, qname, viewer_client):
    job = enqueue(engine, qname)
    html = viewer_client.get(reverse("dashboard:job", args=[job.id])).content.decode()
    assert "No failed attempt." in html


def test_a_cancelled_runs_worker_and_handler_are_shown(engine, qname, viewer_client):
    process = WorkerProcess.objects.create(hostname="web-3", pid=4242)
    job = enqueue(engine, qname)
    (run,) = engine.dequeue(qname, DequeueOptions.batch(1), claimed_by=process.id)
    engine.cancel_job(job.id, reason="Cancelled by alice in the dashboard: duplicate")
    html = viewer_client.get(reverse("dashboard:job", args=[job.id])).content.decode()
    assert "web-3:4242" in html, "a row without a host names its worker process"
    assert "duplicate" in html
    engine.record_handler_end(run, HandlerEnd.CUT_OFF)
    html = viewer_client.get(reverse("dashboard:job", args=[job.id])).content.decode()
    assert "cut off at its timeout" in html


def test_only_the_newest_attempts_are_shown_with_a_link_to_the_rest(engine, qname, viewer_client):
    job = enqueue(engine, qname, cron_schedule="* * * * *")
    for _ in range(SHOWN + 1):
        engine.retry_job(job.id)
        (run,) = engine.dequeue(qname, DequeueOptions.batch(1))
        engine.finish_job_run(run, JobOutcome.failed("nightly run failed"))
    html = viewer_client.get(reverse("dashboard:job", args=[job.id])).content.decode()
    assert html.count('class="attempt ') == SHOWN
    assert f"{reverse('admin:queues_failedattempt_changelist')}?job__id__exact={job.id}" in html


def test_cancelling_a_running_job_says_who_and_why(operator_client, engine, qname):
    job = enqueue(engine, qname)
    engine.dequeue_one(qname)
    url = reverse("dashboard:job-cancel", args=[job.id])
    response = operator_client.post(url, headers={**HTMX, "HX-Prompt": "sent twice"})
    assert "asks its handler to stop" in response.content.decode()
    stored = engine.get_job(job.id)
    reason = "Cancelled by operator in the dashboard: sent twice"
    assert (stored.status, stored.error_message) == (JobStatus.FAILED, reason)
    (row,) = engine.get_job_attempts(job.id)
    assert (row.ended_by, row.error) == ("cancelled", reason)


def test_a_cancel_without_a_reason_still_says_who(operator_client, engine, qname):
    pending, running = enqueue(engine, qname), enqueue(engine, qname)
    engine.dequeue_one(qname)
    response = operator_client.post(
        reverse("dashboard:bulk"), {"action": "cancel", "ids": [pending.id, running.id]}
    )
    assert response.status_code == 302
    for job in (pending, running):
        assert engine.get_job(job.id).error_message == "Cancelled by operator in the dashboard"


def test_the_job_page_offers_a_prompt_for_the_reason(engine, qname, operator_client):
    job = enqueue(engine, qname)
    engine.dequeue_one(qname)
    html = operator_client.get(reverse("dashboard:job", args=[job.id])).content.decode()
    assert 'hx-prompt="Cancel this job? Its worker asks its handler to stop.' in html


# The admin --------------------------------------------------------------------------------
def test_the_admin_job_page_shows_the_attempts_escaped(engine, qname, superuser_client):
    job = failed_twice(engine, qname)
    html = superuser_client.get(reverse("admin:queues_job_change", args=[job.id])).content
    html = html.decode()
    assert "failed attempts" in html.lower() and "ValueError: first" in html
    assert EVIL not in html and "Traceback" in html


def test_the_admin_lists_the_history_read_only(engine, qname, superuser_client):
    job = failed_twice(engine, qname)
    url = reverse("admin:queues_failedattempt_changelist")
    html = superuser_client.get(url, {"job__id__exact": str(job.id)}).content.decode()
    assert "ValueError: first" in html and EVIL not in html
    found = superuser_client.get(url, {"q": "ValueError"}).content.decode()
    assert str(job.id) in found
    row = engine.get_job_attempts(job.id)[0]
    change = reverse("admin:queues_failedattempt_change", args=[row.id])
    page = superuser_client.get(change)
    assert page.status_code == 200 and b'name="_save"' not in page.content
    assert superuser_client.get(reverse("admin:queues_failedattempt_add")).status_code == 403
    delete = reverse("admin:queues_failedattempt_delete", args=[row.id])
    assert superuser_client.post(delete, {"post": "yes"}).status_code == 403
    assert len(engine.get_job_attempts(job.id)) == 2


def test_the_attempts_need_a_staff_login(engine, qname, client):
    job = failed_twice(engine, qname)
    response = client.get(reverse("dashboard:job", args=[job.id]), headers=poll("job-attempts"))
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
    assert client.get(reverse("admin:queues_failedattempt_changelist")).status_code == 302


def test_the_history_is_read_only_when_its_region_is_drawn(engine, qname, viewer_client):
    job = failed_twice(engine, qname)
    url = reverse("dashboard:job", args=[job.id])
    with CaptureQueriesContext(connection) as captured:
        viewer_client.get(url, headers=poll("job-live"))
    assert not [q for q in captured.captured_queries if "queues_failedattempt" in q["sql"]]


def test_a_completed_job_shows_its_last_error_as_an_earlier_attempts(engine, qname, viewer_client):
    job = enqueue(engine, qname, max_attempts=2)
    (run,) = engine.dequeue(qname, DequeueOptions.batch(1))
    engine.finish_job_run(run, JobOutcome.failed("ValueError: first"))
    engine.retry_job(job.id)
    (run,) = engine.dequeue(qname, DequeueOptions.batch(1))
    engine.finish_job_run(run, JobOutcome.completed({"ok": True}))
    assert engine.get_job(job.id).status == JobStatus.COMPLETED
    html = viewer_client.get(reverse("dashboard:job", args=[job.id])).content.decode()
    assert "data-earlier-error" in html and "Error of an earlier attempt" in html
    assert "<h2>Error</h2>" not in html and "ValueError: first" in html


def test_a_dead_job_shows_its_error_as_the_error(engine, qname, viewer_client):
    job = failed_twice(engine, qname)
    html = viewer_client.get(reverse("dashboard:job", args=[job.id])).content.decode()
    assert "<h2>Error</h2>" in html and "data-earlier-error" not in html
