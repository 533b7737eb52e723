"""The job page's failed attempts in a real browser: a traceback opened stays open while the
page polls (the region stands down), the new attempt shows once it is closed; and Cancel asks
why, and the engine records who and why."""

from __future__ import annotations

import pytest

from queues.api import DequeueOptions, Job, JobOutcome, JobQueue, JobStatus
from tests.browser.conftest import screenshot
from tests.conftest import unique_queue

sync_api = pytest.importorskip("playwright.sync_api")
expect = sync_api.expect

pytestmark = pytest.mark.django_db(transaction=True)
TRACE = 'Traceback (most recent call last):\n  File "reports.py", line 12, in build\n'


def fail_once(engine: JobQueue, name: str, n: int) -> None:
    (run,) = engine.dequeue(name, DequeueOptions.batch(1))
    error = f"ReportFailed: no data for day {n}"
    engine.finish_job_run(
        run,
        JobOutcome.failed(error, traceback=f"{TRACE}{error}\n", exception_class="reports.Failed"),
    )


def test_an_open_traceback_stays_open_while_the_page_polls(page, live_server):
    engine, name = JobQueue(), unique_queue("browser_attempts")
    job_id = engine.enqueue(Job(queue_name=name, max_attempts=5))
    for n in (1, 2):
        engine.retry_job(job_id)  # due now, whatever the backoff
        fail_once(engine, name, n)
    page.goto(f"{live_server.url}/jobs/{job_id}/")
    attempts = page.locator("#job-attempts li.attempt")
    expect(attempts).to_have_count(2)
    expect(attempts.first).to_contain_text("no data for day 2")  # newest first
    attempts.first.locator("summary").click()
    expect(attempts.first.locator("details")).to_have_attribute("open", "")
    screenshot(page, "job-attempts")

    engine.retry_job(job_id)
    fail_once(engine, name, 3)
    page.wait_for_timeout(3000)  # longer than a poll: the region stood down
    expect(attempts).to_have_count(2)
    expect(attempts.first.locator("details")).to_have_attribute("open", "")
    attempts.first.locator("summary").click()  # closed: the next poll draws the new one
    expect(attempts).to_have_count(3, timeout=5000)
    expect(attempts.first).to_contain_text("no data for day 3")


def test_cancel_asks_why_and_the_engine_records_who_and_why(page, live_server):
    engine, name = JobQueue(), unique_queue("browser_cancel")
    job_id = engine.enqueue(Job(queue_name=name))
    engine.dequeue_one(name)
    page.goto(f"{live_server.url}/jobs/{job_id}/")
    page.once("dialog", lambda dialog: dialog.accept("the customer withdrew"))
    page.get_by_role("button", name="Cancel").click()
    expect(page.locator("#flash")).to_contain_text("asks its handler to stop")
    job = engine.get_job(job_id)
    assert job.status == JobStatus.FAILED
    assert job.error_message == "Cancelled by browser in the dashboard: the customer withdrew"
    expect(page.locator("#job-attempts")).to_contain_text("the customer withdrew", timeout=5000)
