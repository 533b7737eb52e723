"""In Chromium: "Retry all…" on every matching job of a filter, its confirmation with the
count, and its progress shown in place while a runner works it a page at a time (the test
moves the runner on itself, a page per pass, so no step depends on timing)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from queues.api import Job, JobQueue, JobStatus
from queues.ops import bulk
from tests.browser.conftest import screenshot

sync_api = pytest.importorskip("playwright.sync_api")
expect = sync_api.expect

pytestmark = pytest.mark.django_db(transaction=True)


def test_retry_all_matching_with_its_progress(page, live_server):
    engine = JobQueue()
    ids = engine.enqueue_many([Job(queue_name="imports", payload={"file": i}) for i in range(45)])
    for job_id in ids[:30]:
        engine.mark_job_dead(job_id, "disk full")
    page.goto(f"{live_server.url}/jobs/?status=Dead&error=disk")
    expect(page.locator("#jobs-list tbody tr")).to_have_count(30)
    page.click("form.bulk-all button[value=retry]")
    expect(page.locator("#bulk-panel .bulk-count")).to_have_text("30")
    page.click("#bulk-panel button[value=retry]")
    panel = page.locator("#bulk-panel")
    expect(panel).to_contain_text("Waiting for a worker")
    runner = bulk.BulkRunner(engine, batch_size=10, budget=timedelta(0))
    runner.run_once()  # one page of 10
    expect(panel.locator(".bulk-status")).to_contain_text("10 of 30 (33%)")
    expect(panel.locator("progress")).to_have_attribute("value", "10")
    screenshot(page, "bulk-progress")
    runner.run_once()
    runner.run_once()  # the third page, full: whether more follow, the next pass finds out
    runner.run_once()
    expect(panel).to_have_attribute("data-status", "completed")
    expect(panel.locator(".bulk-status")).to_contain_text("Done: 30 of 30 jobs retried")
    expect(panel.locator("button")).to_have_count(0)  # nothing left to stop
    assert {engine.get_job(i).status for i in ids[:30]} == {JobStatus.PENDING}


def test_stop_an_operation_from_its_panel(page, live_server):
    engine = JobQueue()
    ids = engine.enqueue_many([Job(queue_name="exports") for _ in range(6)])
    page.goto(f"{live_server.url}/queues/exports/?status=Pending")
    page.click("form.bulk-all button[value=cancel]")
    expect(page.locator("#bulk-panel .bulk-count")).to_have_text("6")
    page.click("#bulk-panel button[value=cancel]")
    expect(page.locator("#bulk-panel")).to_contain_text("Waiting for a worker")
    runner = bulk.BulkRunner(engine, batch_size=2, budget=timedelta(0))
    runner.run_once()
    expect(page.locator("#bulk-panel .bulk-status")).to_contain_text("2 of 6")
    page.click("#bulk-panel button:has-text('Stop it')")
    expect(page.locator("#bulk-panel .bulk-status")).to_contain_text("stopping after this page")
    runner.run_once()
    expect(page.locator("#bulk-panel")).to_have_attribute("data-status", "cancelled")
    assert sum(engine.get_job(i).status == JobStatus.FAILED for i in ids) == 2
