"""The history page in a real browser: each queue's chart is drawn (SVG bars with their
numbers in a <title>, which is what a hover shows), the windows switch, dark mode follows the
system's setting, the pause of the live updates holds across pages, and the page fits a
phone."""

from __future__ import annotations

import pytest

from queues.api import Job, JobOutcome, JobQueue
from tests.browser.conftest import screenshot
from tests.conftest import unique_queue

sync_api = pytest.importorskip("playwright.sync_api")
expect = sync_api.expect

pytestmark = pytest.mark.django_db(transaction=True)


def some_history(name: str) -> None:
    engine = JobQueue()
    for _ in range(4):
        engine.enqueue(Job(queue_name=name))
        engine.finish_job_run(engine.dequeue_one(name), JobOutcome.completed())
    engine.enqueue(Job(queue_name=name, max_attempts=1))
    engine.finish_job_run(engine.dequeue_one(name), JobOutcome.failed("boom"))


def test_the_charts_render_with_their_numbers(page, live_server):
    name = unique_queue("browser_history")
    some_history(name)
    page.goto(f"{live_server.url}/history/?window=1h")
    card = page.locator(f'section.history[data-queue="{name}"]')
    chart = card.locator("svg.chart")
    expect(chart).to_be_visible()
    box = chart.bounding_box()
    assert box["width"] > 600 and box["height"] > 100  # drawn at its size
    expect(card.locator("g.bar")).to_have_count(60)
    label = chart.get_attribute("aria-label")
    assert label.startswith(f"{name}, last hour: 4 completed, 1 failed, 0 retried")
    # The jobs' minute (or two, had a minute ended meanwhile): a green and a red bar, stacked,
    # whose <title> (the hover's text) tells their numbers.
    expect(card.locator("rect.failed")).to_have_count(1)
    failed = card.locator("g.bar", has=page.locator("rect.failed"))
    assert " 1 failed, 0 retried" in failed.locator("title").text_content()
    assert failed.locator("rect.failed").bounding_box()["height"] > 0
    assert card.locator("rect.completed").first.bounding_box()["height"] > 0
    expect(card.locator("table.pct")).to_contain_text("p99")
    screenshot(page, "history")
    page.get_by_role("link", name="7d", exact=True).click()
    expect(card.locator("g.bar")).to_have_count(168)


def test_dark_mode_follows_the_system(browser, live_server, page):
    some_history(unique_queue("browser_dark"))
    page.emulate_media(color_scheme="dark")
    page.goto(f"{live_server.url}/history/")
    background = page.evaluate("getComputedStyle(document.querySelector('.card')).backgroundColor")
    assert background == "rgb(26, 32, 41)"
    screenshot(page, "history-dark")
    page.emulate_media(color_scheme="light")
    background = page.evaluate("getComputedStyle(document.querySelector('.card')).backgroundColor")
    assert background == "rgb(255, 255, 255)"


def test_the_pause_of_live_updates_holds_across_pages(page, live_server):
    page.goto(f"{live_server.url}/")
    toggle = page.locator("#live-toggle")
    expect(toggle).to_have_attribute("aria-pressed", "false")
    toggle.click()
    expect(toggle).to_have_attribute("aria-pressed", "true")
    expect(toggle).to_have_text("Resume live")
    page.goto(f"{live_server.url}/history/")
    expect(page.locator("body")).to_have_attribute("data-live-paused", "")
    page.locator("#live-toggle").click()
    expect(page.locator("body")).not_to_have_attribute("data-live-paused", "")


def test_the_history_page_fits_a_phone(browser, live_server, page):
    some_history(unique_queue("browser_phone"))
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{live_server.url}/history/")
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390
    expect(page.locator("svg.chart").first).to_be_visible()
    screenshot(page, "history-phone")
