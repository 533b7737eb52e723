"""Headless Chromium (Debian's, at /usr/bin/chromium) driven by Playwright against
pytest-django's live server, logged in as a staff user with every permission."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

sync_api = pytest.importorskip("playwright.sync_api")

CHROMIUM = "/usr/bin/chromium"
SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
PASSWORD = "browser-pw"


@pytest.fixture(scope="module")
def browser():
    """One Chromium per test module; the async guard is lifted only while it runs."""
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is missing (scripts/system-deps installs Debian's chromium)")
    # Playwright's sync API runs an event loop in this thread; the test's own database
    # calls from the same thread are still synchronous, so Django's guard is lifted.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        with sync_api.sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=CHROMIUM,
                args=["--headless", "--no-sandbox", "--disable-gpu",
                      "--disable-background-networking", "--disable-component-update",
                      "--no-first-run"],
            )
            yield browser
            browser.close()


@pytest.fixture
def staff(transactional_db):
    from django.contrib.auth.models import User

    return User.objects.create_superuser("browser", "browser@example.com", PASSWORD)


@pytest.fixture
def page(browser, live_server, staff):
    """A logged-in page at 1280 px."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    # Generous for a loaded CI machine; the live-update check sets its own 3 s.
    page.set_default_timeout(15_000)
    page.set_default_navigation_timeout(30_000)
    log_in(page, live_server.url)
    yield page
    context.close()


def log_in(page, base: str) -> None:
    page.goto(f"{base}/")
    assert "/admin/login/" in page.url  # the dashboard sent us to log in
    page.fill("#id_username", "browser")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_url(f"{base}/")


def screenshot(page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)
