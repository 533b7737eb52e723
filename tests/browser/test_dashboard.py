"""The dashboard in a real browser: live counts, the pause toggle, retry, the reaper."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from django.utils import timezone

from demo import data as demo_data
from queues.api import Job, JobQueue, JobStatus
from tests.browser.conftest import screenshot

sync_api = pytest.importorskip("playwright.sync_api")
expect = sync_api.expect

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def engine():
    return JobQueue()


@pytest.fixture
def sample(engine):
    demo_data.load(engine, random.Random(3))
    return engine


def _cell(page, queue: str, status: str):
    return page.locator(f'tr[data-queue="{queue}"] td[data-status="{status}"]')


def _completed(queue: str) -> str:
    return str(Job.objects.filter(queue_name=queue, status=JobStatus.COMPLETED).count())


def test_overview_counts_change_live_without_a_reload(sample, page, live_server):
    expect(_cell(page, "emails", "Completed")).to_have_text(_completed("emails"))
    pending = _cell(page, "emails", "Pending")
    before = int(pending.inner_text())
    screenshot(page, "overview")
    page.evaluate("window.notReloaded = true")
    sample.enqueue(Job(queue_name="emails", payload={"to": "live@example.com"}))
    expect(pending).to_have_text(str(before + 1), timeout=3_000)
    assert page.evaluate("window.notReloaded") is True


def test_pause_and_resume_with_the_toggle(sample, page, live_server):
    row = page.locator('tr[data-queue="flaky"]')
    row.get_by_role("button", name="Pause flaky").click()
    expect(row.locator(".badge.paused")).to_contain_text("Paused by browser")
    expect(page.locator("#flash")).to_contain_text("Paused flaky")
    assert sample.is_queue_paused("flaky")
    row.get_by_role("button", name="Resume flaky").click()
    expect(row.locator(".badge.paused")).to_have_count(0)
    assert not sample.is_queue_paused("flaky")


def test_retry_a_dead_job_from_its_page(sample, page, live_server):
    dead = Job.objects.filter(queue_name="flaky", status=JobStatus.DEAD).first()
    page.goto(f"{live_server.url}/jobs/{dead.id}/")
    expect(page.locator("h1 .pill")).to_have_text("Dead")
    screenshot(page, "job")
    page.get_by_role("button", name="Retry now").click()
    expect(page.locator("#flash")).to_contain_text("queued again")
    expect(page.locator("h1 .pill")).to_have_text("Pending")
    assert sample.get_job(dead.id).status == JobStatus.PENDING


def test_run_the_reaper_and_see_the_result(page, live_server, engine):
    engine.enqueue(Job(queue_name="emails", payload={}))
    job = engine.dequeue_one("emails")
    Job.objects.filter(id=job.id).update(lease_expires_at=timezone.now() - timedelta(minutes=2))
    page.goto(f"{live_server.url}/reaper/")
    expect(page.locator("#reaper-live")).to_contain_text(str(job.id)[:8])
    page.get_by_role("button", name="Run reaper now").click()
    expect(page.locator("#reaper-result")).to_have_text("Reaper ran: 1 requeued, 0 marked Dead.")
    expect(page.locator("#reaper-live")).to_contain_text("No running job has an expired lease")
    assert engine.get_job(job.id).status == JobStatus.PENDING


def test_queue_page_filters_and_bulk_retries(sample, page, live_server):
    page.goto(f"{live_server.url}/queues/flaky/")
    expect(page.locator("#queue-jobs tbody tr").first).to_be_visible()
    screenshot(page, "queue")
    page.select_option("select[name=status]", "Dead")
    page.get_by_role("button", name="Filter").click()
    rows = page.locator("#queue-jobs tbody tr")
    dead = Job.objects.filter(queue_name="flaky", status=JobStatus.DEAD).count()
    assert dead > 2
    expect(rows).to_have_count(dead)
    for box in page.locator("#queue-jobs input.pick").all()[:2]:
        box.check()
    page.get_by_role("button", name="Retry", exact=True).click()
    expect(page.locator("#flash")).to_contain_text("2 of 2 jobs queued again")
    expect(rows).to_have_count(dead - 2)


def test_overview_fits_a_phone(sample, browser, live_server, staff, quiet_server):
    from tests.browser.conftest import log_in

    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    phone = context.new_page()
    phone.set_default_timeout(15_000)
    phone.set_default_navigation_timeout(30_000)
    log_in(phone, live_server.url)
    expect(_cell(phone, "emails", "Completed")).to_have_text(_completed("emails"))
    overflow = phone.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0
    screenshot(phone, "overview-phone")
    context.close()
