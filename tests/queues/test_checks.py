"""The system checks: each set-up a project can get wrong is refused with its id, and the
project's own settings pass them all."""

from __future__ import annotations

import pytest
from django.core import checks
from django.db.utils import ConnectionHandler
from django.tasks import task_backends
from django.test import modify_settings, override_settings

from queues import checks as queue_checks
from queues.conf import OPTIONS
from workers.checks import check_runworker_wins

HAMMERWEB = "queues.tasks_backend.HammerwebBackend"


def ids(errors) -> list[str]:
    return sorted(error.id for error in errors)


@pytest.mark.django_db
def test_the_projects_settings_pass_every_check():
    # On MySQL/MariaDB this includes the partial-index warning, silenced for Job alone.
    errors = checks.run_checks(include_deployment_checks=False, databases=["default"])
    assert [e for e in errors if e.level >= checks.WARNING] == []


def test_hammerweb_settings_are_validated(settings):
    settings.HAMMERWEB = {"PG_PREPARE": "no", "WEBSOCKETS": False, "WEBSOCKET": 1}
    errors = queue_checks.check_settings()
    assert ids(errors) == ["queues.E001"] * 3
    text = " ".join(error.msg for error in errors)
    assert "HAMMERWEB['PG_PREPARE'] must be a bool, not 'no'" in text
    assert "HAMMERWEB['WEBSOCKETS'] is not a Hammerweb setting" in text
    assert "HAMMERWEB['WEBSOCKET'] must be a bool, not 1" in text

    settings.HAMMERWEB = ["PG_PREPARE"]
    assert [e.msg for e in queue_checks.check_settings()] == ["HAMMERWEB must be a dict, not list"]
    settings.HAMMERWEB = {name: option.default for name, option in OPTIONS.items()}
    assert queue_checks.check_settings() == []


def test_a_trace_url_is_an_http_url_holding_the_trace_id(settings):
    for url in (
        "https://jaeger.example/trace/{trace_id}",
        "http://jaeger:16686/trace/{trace_id}",
        "https://grafana.example/explore?trace={trace_id}&orgId=1",
        None,
    ):
        settings.HAMMERWEB = {"TRACE_URL": url}
        assert queue_checks.check_settings() == [], url
    for url in (
        "javascript:alert(1)//{trace_id}",
        "data:text/html,{trace_id}",
        "ftp://files.example/{trace_id}",
        "https://jaeger.example/trace/",  # the same link for every job
        "https:///{trace_id}",
        "https://jaeger.example/trace/ {trace_id}",
        " https://jaeger.example/{trace_id}",
        "http://[::1/{trace_id}",
    ):
        settings.HAMMERWEB = {"TRACE_URL": url}
        (error,) = queue_checks.check_settings()
        assert error.id == "queues.E001"
        assert error.msg == (
            "HAMMERWEB['TRACE_URL'] must be an http:// or https:// URL holding {trace_id}, "
            f"not {url!r}"
        )
    settings.HAMMERWEB = {"TRACE_URL": b"https://jaeger.example/{trace_id}"}
    assert "must be a str" in queue_checks.check_settings()[0].msg


def test_the_htmx_middleware_is_required(settings):
    settings.MIDDLEWARE = [m for m in settings.MIDDLEWARE if "htmx" not in m]
    (error,) = queue_checks.check_dashboard()
    assert error.id == "queues.E002"
    assert '"django_htmx.middleware.HtmxMiddleware"' in error.hint


@modify_settings(INSTALLED_APPS={"remove": ["django_htmx", "django.contrib.admin"]})
def test_django_htmx_and_the_admin_are_required():
    assert ids(queue_checks.check_dashboard()) == ["queues.E003", "queues.E004"]


def test_asgi_without_a_channel_layer_is_warned_about(settings):
    del settings.CHANNEL_LAYERS
    (warning,) = queue_checks.check_dashboard()
    assert (warning.id, warning.level) == ("queues.W005", checks.WARNING)
    assert "InMemoryChannelLayer" in warning.hint
    settings.HAMMERWEB = {"WEBSOCKET": False}  # the pages only poll: nothing missing
    assert queue_checks.check_dashboard() == []


def _database(engine: str, name: str = "x", **options) -> dict:
    return {"ENGINE": f"django.db.backends.{engine}", "NAME": name, "OPTIONS": options}


def test_an_in_memory_sqlite_database_is_refused():
    handler = ConnectionHandler(
        {
            "default": _database("sqlite3", ":memory:"),
            "shared": _database("sqlite3", "file:jobs?mode=memory&cache=shared"),
            "file": _database("sqlite3", "/srv/jobs.sqlite3"),
            # Django's test runner swaps this one in before it runs the checks.
            "test": _database("sqlite3", "file:memorydb_test?mode=memory&cache=shared"),
        }
    )
    errors = queue_checks.database_errors(handler)
    assert ids(errors) == ["queues.E010", "queues.E010"]
    assert {e.msg.split("]")[0] for e in errors} == {"DATABASES['default'", "DATABASES['shared'"}


def test_mysql_needs_read_committed():
    handler = ConnectionHandler(
        {
            "default": _database("mysql"),  # Django's default: read committed
            "explicit": _database("mysql", isolation_level="READ COMMITTED"),
            "repeatable": _database("mysql", isolation_level="repeatable read"),
            "server": _database("mysql", isolation_level=None),  # the server's (REPEATABLE READ)
        }
    )
    errors = queue_checks.database_errors(handler)
    assert ids(errors) == ["queues.E011", "queues.E011"]
    assert "'repeatable read'" in errors[0].msg and "None" in errors[1].msg
    assert 'set it to "read committed"' in errors[0].hint


def test_a_tasks_backend_no_worker_can_run_is_refused(settings):
    settings.TASKS = {
        "jobs": {
            "BACKEND": HAMMERWEB,
            "QUEUES": ["emails", "", "x" * 300],
            "OPTIONS": {"DATABASE": "nowhere", "MAX_ATTEMPTS": 0, "RETRIES": 3},
        }
    }
    errors = task_backends["jobs"].check()
    assert ids(errors) == [
        "queues.E021",
        "queues.E021",
        "queues.E022",
        "queues.E023",
        "queues.E024",
    ]
    assert any("'RETRIES'" in e.msg for e in errors)
    settings.TASKS = {"jobs": {"BACKEND": HAMMERWEB, "QUEUES": ["emails"]}}
    assert task_backends["jobs"].check() == []


@modify_settings(INSTALLED_APPS={"remove": ["workers"]})
def test_a_tasks_backend_without_the_workers_app_is_refused(settings):
    settings.TASKS = {"default": {"BACKEND": HAMMERWEB, "QUEUES": []}}
    assert ids(task_backends["default"].check()) == ["queues.E020"]


def test_an_app_above_workers_with_its_own_runworker_is_refused():
    assert check_runworker_wins() == []
    with override_settings(INSTALLED_APPS=["channels", "workers", "queues"]):
        (error,) = check_runworker_wins()
    assert error.id == "workers.E001"
    assert "Move 'workers' above 'channels'" in error.hint
    with override_settings(INSTALLED_APPS=["workers", "channels", "queues"]):
        assert check_runworker_wins() == []
