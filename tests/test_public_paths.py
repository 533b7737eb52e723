"""The paths users type keep working wherever the modules behind them live: the two API
facades, the URL and WebSocket routes, the django.tasks backend, the signals, the management
commands and the settings module's dict."""

from __future__ import annotations

import importlib

import pytest
from django.core.management import get_commands
from django.urls import URLPattern, URLResolver

#: `queues.api.__all__` as released: names may be added, never taken away.
QUEUES_API = [
    "CANCELLED", "LOST", "RELEASED", "STARTED", "AttemptEnd", "BatchResult", "BatchStatus",
    "CronSchedule", "DependencyStatus", "DequeueOptions", "EnqueueResult", "EngineError",
    "FailedAttempt", "FailurePolicy", "HandlerEnd", "InvalidBatch", "InvalidCronSchedule",
    "InvalidJob", "InvalidJobTransition", "InvalidPayload", "InvalidPriority",
    "InvalidQueueConfig", "InvalidQueueName", "InvalidSchedule", "InvalidTags",
    "InvalidWorkflow", "Job", "JobBatch", "JobGroup", "JobNotFound", "JobOutcome",
    "JobPriority", "JobQueue", "JobStatus", "MockClock", "PartialFailureMode",
    "PriorityWeights", "QueueConfig", "QueueError", "RecordedOutcome", "RetryStrategy",
    "Schedule", "ScheduleSync", "StaleJobRecovery", "SystemClock", "TestQueue",
    "UnsupportedDatabase", "WorkflowStatus", "unique_key_for",
]
WORKERS_API = [
    "HammerwebTaskContext", "JobError", "NoHandler", "RateLimit", "RateLimiter",
    "RunawayHandler", "ThrottleConfig", "Throttle", "Worker", "WorkerStats", "autodiscover",
    "dispatch", "handler_for", "job_handler",
]
SIGNALS = ["job_enqueued", "job_started", "job_succeeded", "job_failed", "job_reaped"]
COMMANDS = ["jobs", "hammerweb", "syncschedules", "runworker"]


@pytest.mark.parametrize(("module", "names"), [("queues.api", QUEUES_API),
                                              ("workers.api", WORKERS_API)])
def test_the_facades_export_every_released_name(module, names):
    api = importlib.import_module(module)
    assert set(names) <= set(api.__all__)
    assert [name for name in names if not hasattr(api, name)] == []


def test_the_test_queue_is_the_same_class_at_both_paths():
    from queues.api import TestQueue
    from queues.testing import TestQueue as Direct

    assert TestQueue is Direct


def test_the_dashboard_urls_and_routes_are_where_projects_include_them():
    urls = importlib.import_module("queues.urls")
    routing = importlib.import_module("queues.routing")
    assert urls.app_name == "dashboard"
    assert urls.urlpatterns and all(
        isinstance(p, URLPattern | URLResolver) for p in urls.urlpatterns
    )
    assert [p.name for p in routing.websocket_urlpatterns] == ["dashboard-socket"]


def test_the_tasks_backend_and_the_signals_keep_their_paths():
    from django.tasks.backends.base import BaseTaskBackend

    backend = importlib.import_module("queues.tasks_backend").HammerwebBackend
    assert issubclass(backend, BaseTaskBackend)
    signals = importlib.import_module("queues.signals")
    assert [type(getattr(signals, name)).__name__ for name in SIGNALS] == ["JobSignal"] * 5


def test_every_management_command_is_found_under_its_app():
    commands = get_commands()
    assert {name: commands.get(name) for name in COMMANDS} == {
        "jobs": "queues", "hammerweb": "queues", "syncschedules": "queues", "runworker": "workers"
    }
