"""In Chromium: a batch declared with on_success, on_failure and on_complete callbacks runs to
success; its page, reached from the batches list, shows each event in the Callbacks section,
the two that came linked to the job they enqueued (on_failure "not called": the batch
completed), and the success callback's link opens that job, its payload carrying the
batch's tally."""

from __future__ import annotations

import pytest

from queues.api import DequeueOptions, Job, JobBatch, JobOutcome, JobQueue, JobStatus
from queues.models import Batch
from tests.browser.conftest import screenshot
from tests.conftest import unique_queue

sync_api = pytest.importorskip("playwright.sync_api")
expect = sync_api.expect

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_callbacks_of_a_finished_batch_link_to_their_jobs(page, live_server):
    engine = JobQueue()
    work, after = unique_queue("browser_cb_work"), unique_queue("browser_cb_after")
    files = [Job(queue_name=work, payload={"file": i}) for i in range(3)]
    batch = JobBatch("nightly import", jobs=files)
    batch.on_success(Job(queue_name=after, payload={"notify": "ops"}))
    batch.on_failure(Job(queue_name=after, payload={"page": "on-call"}))
    batch.on_complete(Job(queue_name=after, payload={"cleanup": True}))
    batch_id = engine.enqueue_batch(batch)
    runs = engine.dequeue(work, DequeueOptions.batch(3))
    assert len(runs) == 3
    engine.finish_job_runs([(run, JobOutcome.completed()) for run in runs])
    enqueued = Batch.objects.get(id=batch_id).callback_jobs
    assert set(enqueued) == {"success", "complete"}

    page.goto(f"{live_server.url}/batches/")
    page.get_by_role("link", name="nightly import").first.click()
    expect(page).to_have_url(f"{live_server.url}/batches/{batch_id}/")
    rows = page.locator("#callbacks tbody tr")
    expect(rows).to_have_count(3)
    expect(rows.locator("td:first-child")).to_have_text(["success", "failure", "complete"])
    for row, event in ((rows.nth(0), "success"), (rows.nth(2), "complete")):
        expect(row).to_contain_text(after)
        link = row.get_by_role("link", name=enqueued[event][:8])
        expect(link).to_have_attribute("href", f"/jobs/{enqueued[event]}/")
        expect(row.locator(".pill")).to_have_text(JobStatus.PENDING)
    expect(rows.nth(1)).to_contain_text("not called")
    expect(rows.nth(1).get_by_role("link")).to_have_count(0)
    screenshot(page, "batch-callbacks")

    rows.nth(0).get_by_role("link", name=enqueued["success"][:8]).click()
    expect(page).to_have_url(f"{live_server.url}/jobs/{enqueued['success']}/")
    expect(page.locator("#job-live h1")).to_contain_text(enqueued["success"])
    expect(page.locator("#job-live h1 .pill")).to_have_text(JobStatus.PENDING)
    payload = page.locator("section.card", has_text="Payload").locator("pre.json")
    expect(payload).to_contain_text('"notify": "ops"')
    expect(payload).to_contain_text('"completed_jobs": 3')
