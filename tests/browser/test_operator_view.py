"""The operator's view in Chromium: the jobs page's list shows what "Retry all" / "Cancel all"
did once it is done, without a reload; a bulk confirmation opens as a modal dialog, away
from the selection's buttons; every time names its zone; and on a phone (390 px) the
overview's Pause button, the history's p99 and the bulk buttons and progress all fit."""

from __future__ import annotations

import random
import re
from datetime import timedelta

import pytest

from demo import data as demo_data
from queues.api import Job, JobOutcome, JobQueue, JobStatus
from queues.models import BulkOperation
from queues.ops import bulk
from tests.browser.conftest import screenshot
from tests.conftest import unique_queue

sync_api = pytest.importorskip("playwright.sync_api")
expect = sync_api.expect

pytestmark = pytest.mark.django_db(transaction=True)
PHONE = {"width": 390, "height": 844}


def run_bulk(engine: JobQueue) -> None:
    """What a runworker's maintenance thread does: every pending operation, to its end."""
    runner = bulk.BulkRunner(engine, batch_size=1000, budget=timedelta(0))
    for _ in range(10):
        if not BulkOperation.objects.exclude(status__in=("completed", "cancelled", "failed")):
            return
        runner.run_once()
    raise AssertionError("the operation did not finish")


@pytest.mark.parametrize(
    ("verb", "before", "after"),
    [("cancel", JobStatus.PENDING, JobStatus.FAILED), ("retry", JobStatus.DEAD, JobStatus.PENDING)],
)
def test_the_jobs_list_shows_the_result_of_all_matching_without_a_reload(
    page, live_server, verb, before, after
):
    engine = JobQueue()
    name = unique_queue("browser_all")
    ids = engine.enqueue_many([Job(queue_name=name, payload={"n": i}) for i in range(4)])
    if before == JobStatus.DEAD:
        for job_id in ids:
            engine.mark_job_dead(job_id, "disk full")
    page.goto(f"{live_server.url}/jobs/?queue={name}")
    statuses = page.locator("#jobs-list tbody td .pill")
    expect(statuses).to_have_text([before.value] * 4)
    page.evaluate("window.notReloaded = true")
    page.click(f"form.bulk-all button[value={verb}]")
    page.click(f"dialog.confirm button[value={verb}]")
    expect(page.locator("#bulk-panel")).to_contain_text("Waiting for a worker")
    run_bulk(engine)
    expect(page.locator("#bulk-panel")).to_have_attribute("data-status", "completed")
    expect(statuses).to_have_text([after.value] * 4)
    assert page.evaluate("window.notReloaded") is True
    assert {engine.get_job(i).status for i in ids} == {after}


def test_a_destructive_confirmation_opens_apart_from_the_selection(page, live_server):
    engine = JobQueue()
    name = unique_queue("browser_confirm")
    ids = engine.enqueue_many([Job(queue_name=name) for _ in range(3)])
    page.goto(f"{live_server.url}/queues/{name}/")
    expect(page.locator("form.bulk-all")).to_contain_text("With every job of this queue:")
    page.locator("input.pick").first.check()  # the selection's Delete is there, under the panel
    page.click("form.bulk-all button[value=delete]")
    dialog = page.locator("dialog.confirm")
    expect(dialog).to_be_visible()
    assert dialog.evaluate("d => d.matches(':modal')")  # the rest of the page is inert
    expect(dialog.locator("h2")).to_have_text("Delete 3 jobs?")
    yes = dialog.get_by_role("button", name="Yes, delete 3 jobs")
    no = dialog.get_by_role("button", name="No, leave them")
    expect(no).to_be_focused()  # Enter at once keeps the jobs
    gap = yes.bounding_box()["x"] - (no.bounding_box()["x"] + no.bounding_box()["width"])
    assert gap > 100  # the two answers far apart
    assert yes.evaluate("b => getComputedStyle(b).backgroundColor") == "rgb(201, 42, 42)"
    screenshot(page, "confirm-delete")
    page.keyboard.press("Escape")
    expect(dialog).to_have_count(0)
    assert Job.objects.filter(id__in=ids).count() == 3
    page.click("form.bulk-all button[value=delete]")
    page.get_by_role("button", name="No, leave them").click()
    expect(page.locator("dialog.confirm")).to_have_count(0)
    page.click("form.bulk-all button[value=delete]")
    page.get_by_role("button", name="Yes, delete 3 jobs").click()
    expect(page.locator("#bulk-panel")).to_contain_text("Waiting for a worker")
    expect(page.locator("dialog")).to_have_count(0)
    page.set_viewport_size(PHONE)
    page.click("form.bulk-all button[value=retry]")
    dialog = page.locator("dialog.confirm")
    expect(dialog).to_be_visible()  # opened by the click's script: wait for it
    box = dialog.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]
    screenshot(page, "confirm-retry-phone")


def test_every_time_on_a_recurring_jobs_page_names_its_zone(page, live_server):
    engine = JobQueue()
    name = unique_queue("browser_cron")
    job_id = engine.enqueue(
        Job(queue_name=name, cron_schedule="0 0 3 * * *", timezone="Europe/Paris")
    )
    page.goto(f"{live_server.url}/jobs/{job_id}/")
    times = page.locator("#job-live time")
    expect(times.first).to_be_visible()
    texts = times.all_inner_texts()
    assert len(texts) >= 7  # queued, scheduled and the five next runs
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", t) for t in texts), texts
    scheduled = page.locator("dt:has-text('Scheduled') + dd")
    expect(scheduled).to_contain_text(" UTC")
    runs = page.locator("ol.runs li")
    expect(runs).to_have_count(5)
    # 03:00 in Paris is 02:00 UTC in winter, 01:00 in summer; both written, each named.
    expect(runs.first).to_contain_text(re.compile(r"0[12]:00:00 UTC · 03:00:00 CES?T"))
    screenshot(page, "job-recurring")
    page.set_viewport_size(PHONE)
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    screenshot(page, "job-recurring-phone")


def test_the_overview_fits_a_phone_with_its_pause_buttons(page, live_server):
    demo_data.load(JobQueue(), random.Random(3))
    page.set_viewport_size(PHONE)
    page.goto(f"{live_server.url}/")
    buttons = page.locator("#overview-live button.toggle")
    expect(buttons.first).to_be_visible()
    for box in (b.bounding_box() for b in buttons.all()):
        assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    # Each number keeps its label.
    row = page.locator("tr[data-queue=emails]")
    expect(row.locator("td[data-status=Pending]")).to_be_visible()
    label = row.locator("td[data-status=Pending]").evaluate(
        "td => getComputedStyle(td, '::before').content"
    )
    assert label == '"Pending"'
    screenshot(page, "overview-phone")
    row.get_by_role("button", name="Pause emails").click()
    expect(row.locator(".badge.paused")).to_be_visible()


def test_the_history_shows_p99_on_a_phone(page, live_server):
    name = unique_queue("browser_p99")
    engine = JobQueue()
    for _ in range(3):
        engine.enqueue(Job(queue_name=name))
        engine.finish_job_run(engine.dequeue_one(name), JobOutcome.completed())
    page.set_viewport_size(PHONE)
    page.goto(f"{live_server.url}/history/?queue={name}")
    table = page.locator("table.pct")
    p99 = table.locator("th", has_text="p99")
    expect(p99).to_be_visible()
    box = p99.bounding_box()
    assert box["x"] + box["width"] <= PHONE["width"]
    wrap = table.locator("xpath=..")
    assert wrap.evaluate("w => w.scrollWidth <= w.clientWidth")  # nothing hidden sideways
    screenshot(page, "history-p99-phone")


def test_the_bulk_buttons_and_progress_on_a_phone(page, live_server):
    engine = JobQueue()
    name = unique_queue("browser_bar")
    engine.enqueue_many([Job(queue_name=name) for _ in range(5)])
    page.set_viewport_size(PHONE)
    page.goto(f"{live_server.url}/jobs/?queue={name}")
    retry, cancel = (
        page.locator("form.bulk-all button[value=retry]"),
        page.locator("form.bulk-all button[value=cancel]"),
    )
    a, b = retry.bounding_box(), cancel.bounding_box()
    apart = b["x"] - (a["x"] + a["width"]) >= 6 or b["y"] >= a["y"] + a["height"] + 6
    assert apart, (a, b)
    page.click("form.bulk-all button[value=cancel]")
    page.click("dialog.confirm button[value=cancel]")
    panel = page.locator("#bulk-panel")
    expect(panel.locator("progress")).to_be_visible()
    bar, whole = panel.locator("progress").bounding_box(), panel.bounding_box()
    assert bar["width"] >= 0.8 * whole["width"]
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    screenshot(page, "bulk-progress-phone")
