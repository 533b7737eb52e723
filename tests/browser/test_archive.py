"""In Chromium: an operator finds an archived job by its id on the all-queues search, opens
it (marked Archived, its result, its error history and the trace of its enqueue read from
the archive), restores it (the page asks first; the POST carries the page's CSRF token) and
lands on the job's live page, the job back in the jobs table with its history."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone
from opentelemetry import context, propagate

from queues.api import Job, JobOutcome, JobQueue, JobStatus, MockClock
from queues.models import ArchivedJob, FailedAttempt
from tests.browser.conftest import screenshot
from tests.conftest import unique_queue

sync_api = pytest.importorskip("playwright.sync_api")
expect = sync_api.expect

pytestmark = pytest.mark.django_db(transaction=True)
ERROR = "PaymentDeclined: card ending 4242 declined"
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"


def archived_job(name: str) -> str:
    """A job enqueued in a request's trace, that failed once, then completed with a result,
    40 days ago; archived now."""
    old = JobQueue(clock=MockClock(timezone.now() - timedelta(days=40)))
    request = propagate.extract({"traceparent": f"00-{TRACE}-00f067aa0ba902b7-01"})
    token = context.attach(request)  # as a project's middleware would for its requests
    try:
        job_id = old.enqueue(Job(queue_name=name, payload={"order": 7}, max_attempts=3))
    finally:
        context.detach(token)
    run = old.dequeue_one(name)
    trace = f"Traceback ...\n{ERROR}\n"
    failed = JobOutcome.failed(ERROR, traceback=trace, exception_class="shop.Declined")
    old.finish_job_run(run, failed)
    old.retry_job(job_id)  # due now, whatever the backoff
    old.finish_job_run(old.dequeue_one(name), JobOutcome.completed({"receipt": "R-7"}))
    assert JobQueue().archive_jobs(timedelta(days=7), queue_name=name) == 1
    return str(job_id)


def test_an_archived_job_is_found_opened_and_restored(page, live_server, settings):
    settings.HAMMERWEB = {"TRACE_URL": "https://jaeger.example/trace/{trace_id}"}
    name = unique_queue("browser_archive")
    job_id = archived_job(name)
    page.goto(f"{live_server.url}/jobs/")
    page.get_by_label("Job id").fill(job_id)
    page.get_by_role("button", name="Search").click()
    found = page.locator("#archived-matches tr.archived")
    expect(found).to_have_count(1)
    expect(found).to_contain_text(name)
    found.get_by_role("link", name=job_id[:8]).click()

    expect(page).to_have_url(f"{live_server.url}/jobs/{job_id}/")
    head = page.locator("#job-live h1")
    expect(head.locator(".pill.archived")).to_have_text("Archived")
    expect(head.locator(".pill.s-completed")).to_have_text("Completed")
    expect(page.locator("#archived-note")).to_contain_text("read-only here")
    expect(page.locator("section.card", has_text="Result")).to_contain_text('"receipt": "R-7"')
    attempts = page.locator("#job-attempts li.attempt")
    expect(attempts).to_have_count(1)
    expect(attempts).to_contain_text(ERROR)
    expect(attempts.locator("code.exc")).to_have_text("shop.Declined")
    trace = page.locator("#job-live [data-trace-id]")
    expect(trace).to_have_text(TRACE)
    expect(trace).to_have_attribute("href", f"https://jaeger.example/trace/{TRACE}")
    expect(page.get_by_role("button", name="Retry now")).to_have_count(0)  # read-only
    screenshot(page, "job-archived")

    asked = []
    page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.accept()))
    page.get_by_role("button", name="Restore").click()
    expect(page.locator("#flash")).to_contain_text(f"Job {job_id} restored from the archive.")
    assert asked == ["Put this job back in the jobs table as it was?"]
    expect(page).to_have_url(f"{live_server.url}/jobs/{job_id}/")
    expect(page.locator(".pill.archived")).to_have_count(0)
    expect(page.locator("#archived-note")).to_have_count(0)
    live = page.locator("#job-live")
    expect(live).to_have_attribute("hx-trigger", re.compile(r"^every 2s"))  # live again
    expect(live.locator("h1 .pill.s-completed")).to_have_text("Completed")
    expect(page.locator("section.card", has_text="Result")).to_contain_text('"receipt": "R-7"')
    expect(page.locator("#job-attempts li.attempt.end-error")).to_contain_text(ERROR)
    expect(live.locator("[data-trace-id]")).to_have_attribute("data-trace-id", TRACE)
    assert JobQueue().get_job(job_id).status == JobStatus.COMPLETED
    assert not ArchivedJob.objects.filter(id=job_id).exists()
    assert FailedAttempt.objects.filter(job_id=job_id).count() == 1
