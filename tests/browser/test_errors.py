"""In Chromium: the Errors page groups failures with a chart and a sample traceback, the
overview points at a new group, "Retry all in this group" asks, then opens the bulk
operation's progress; and the job page says why a job waits."""

from __future__ import annotations

import re

import pytest

from queues.api import Job, JobQueue, JobStatus
from tests.browser.conftest import screenshot
from tests.conftest import unique_queue
from tests.queues.reads.test_error_groups import fail

sync_api = pytest.importorskip("playwright.sync_api")
expect = sync_api.expect

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_error_group_is_shown_and_retried(page, live_server):
    engine = JobQueue()
    name = unique_queue("browser_errors")
    ids = fail(engine, name, [("app.Timeout", f"call to 10.0.0.{i} timed out after {i} s")
                              for i in range(3)])  # fmt: skip
    page.goto(f"{live_server.url}/")
    notice = page.locator("#errors-notice")
    expect(notice).to_contain_text("app.Timeout")
    notice.get_by_role("link", name="Error groups").click()
    group = page.locator("section.error-group", has_text="app.Timeout")
    expect(group).to_contain_text("call to <ip> timed out after <n> s")
    expect(group.locator(".count")).to_have_text("3 attempts")
    expect(group.locator("svg.chart rect.failed")).not_to_have_count(0)
    group.locator("summary").click()
    expect(group.locator("pre.traceback")).to_contain_text("Traceback")
    screenshot(page, "errors")
    page.once("dialog", lambda dialog: dialog.accept())
    group.get_by_role("button", name="Retry all in this group").click()
    expect(page).to_have_url(re.compile(r"/bulk/\d+/$"))
    expect(page.locator("body")).to_contain_text("3")
    assert {engine.get_job(i).status for i in ids} == {JobStatus.DEAD}, "a worker retries them"


def test_the_job_page_says_why_it_waits(page, live_server):
    engine = JobQueue()
    name = unique_queue("browser_why")
    job_id = engine.enqueue(Job(queue_name=name))
    engine.pause_queue(name, paused_by="ann")
    page.goto(f"{live_server.url}/jobs/{job_id}/")
    why = page.locator("#why-waiting")
    expect(why.locator('[data-reason="paused"]')).to_contain_text("paused, by ann")
    expect(why.locator('[data-reason="no_worker"]')).to_contain_text("No live worker")
    screenshot(page, "job-why")
