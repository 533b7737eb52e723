"""Headless Chromium (Debian's, at /usr/bin/chromium) driven by Playwright against
pytest-django's live server, logged in as a staff user with every permission.

Screenshots go to var/screenshots/ (ignored by git), or where `HAMMERWEB_SCREENSHOTS` says (a
path relative to the repository, or absolute). The manual's are made by scripts/screenshots."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.conftest import free_port, wait_for_server

sync_api = pytest.importorskip("playwright.sync_api")

CHROMIUM = "/usr/bin/chromium"
ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / (os.environ.get("HAMMERWEB_SCREENSHOTS") or "var/screenshots")
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
                args=[
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-background-networking",
                    "--disable-component-update",
                    "--no-first-run",
                ],
            )
            yield browser
            browser.close()


@pytest.fixture
def staff(transactional_db):
    from django.contrib.auth.models import User

    return User.objects.create_superuser("browser", "browser@example.com", PASSWORD)


class InFlight:
    """Counts the live server's requests being served (it serves each in a thread)."""

    def __init__(self, httpd) -> None:
        self.count = 0
        self.idle = threading.Condition()
        serve = httpd.process_request_thread

        def counted(*args):
            with self.idle:
                self.count += 1
            try:
                serve(*args)
            finally:
                with self.idle:
                    self.count -= 1
                    self.idle.notify_all()

        httpd.process_request_thread = counted

    def wait_idle(self, timeout: float) -> bool:
        with self.idle:
            return self.idle.wait_for(lambda: self.count == 0, timeout)


@pytest.fixture
def quiet_server(live_server, transactional_db):
    """After the test (its page closed), wait for the live server's requests still being
    served: a poll of the page's live regions sent just before it closed still runs its
    queries, and the flush of the test database (one TRUNCATE of every table) then
    deadlocks with it on PostgreSQL."""
    httpd = live_server.thread.httpd
    in_flight = getattr(httpd, "_in_flight", None)
    if in_flight is None:
        in_flight = httpd._in_flight = InFlight(httpd)
    yield
    assert in_flight.wait_idle(30), "the live server's requests did not end"


@pytest.fixture
def page(browser, live_server, staff, quiet_server):
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


@pytest.fixture(scope="module")
def asgi_server(django_db_setup, tmp_path_factory):
    """The project's ASGI application served by daphne (`manage.py runserver`, which daphne
    provides and which serves the static files) in a subprocess on the test database:
    pytest-django's live_server is WSGI-only, so it has no WebSocket. Yields the base URL."""
    port = free_port()
    log = tmp_path_factory.mktemp("asgi") / "server.log"
    env = {**os.environ, "HAMMERWEB_USE_TEST_DB": "1", "PYTHONUNBUFFERED": "1", "DJANGO_DEBUG": "1"}
    with log.open("wb") as out:
        server = subprocess.Popen(
            [
                sys.executable,
                "manage.py",
                "runserver",
                f"127.0.0.1:{port}",
                "--noreload",
                "--skip-checks",
            ],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_for_server(server, port, log, 30)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
