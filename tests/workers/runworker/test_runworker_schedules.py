"""`runworker` synchronises `HAMMERWEB["SCHEDULES"]` when it starts (the supervisor for its
children under --processes), and runs what the schedules enqueue."""

from __future__ import annotations

import io
import json
import signal

import pytest
from django.core.management import call_command

from queues.models import Job
from tests.conftest import unique_queue
from tests.workers.runworker.test_runworker import runworker  # noqa: F401 (the fixture)
from tests.workers.support.helpers import wait_until
from tests.workers.support.subprocess_jobs import WORK_QUEUE

pytestmark = pytest.mark.django_db(transaction=True)


def _declare(monkeypatch, schedules: dict) -> None:
    """The settings of the runworker processes the test starts."""
    monkeypatch.setenv("DJANGO_SETTINGS_MODULE", "tests.queues.support.schedule_settings")
    monkeypatch.setenv("HAMMERWEB_TEST_SCHEDULES", json.dumps(schedules))


def test_runworker_syncs_at_start_and_runs_a_declared_task(runworker, monkeypatch):  # noqa: F811
    name = unique_queue("declared_task")
    task = "tests.workers.support.subprocess_jobs.multiply"
    _declare(monkeypatch, {name: {"task": task, "cron": "* * * * * *", "args": [6, 7]}})
    run = runworker(WORK_QUEUE)

    def ran() -> bool:
        row = Job.objects.filter(schedule_name=name).first()
        return row is not None and row.completed_at is not None

    wait_until(ran, 30, "the declared task did not run")
    run.signal(signal.SIGTERM)
    assert run.wait() == 0, run.text()
    row = Job.objects.get(schedule_name=name)
    # A recurring run keeps no result: that it completed, and not failed, is what it leaves.
    assert row.error_message is None and row.failed_at is None
    assert row.recurring and row.queue_name == WORK_QUEUE and row.status == "Pending"
    assert f"schedules: created 1 ({name})" in run.text()


def test_a_supervisor_syncs_for_its_children(runworker, monkeypatch):  # noqa: F811
    name = unique_queue("declared_supervised")
    _declare(monkeypatch, {f"{name}-{i}": {"queue": name, "cron": "0 3 * * *"} for i in range(3)})
    run = runworker(name, "--processes", "2", "--burst")
    assert run.wait() == 0, run.text()
    assert run.text().count("schedules: created 3") == 1, run.text()
    assert "schedules:" not in run.text().split("schedules: created 3", 1)[1]
    assert Job.objects.filter(queue_name=name, schedule_name__isnull=False).count() == 3


def test_no_schedules_leaves_the_rows_alone(settings):
    name = unique_queue("declared_off")
    settings.HAMMERWEB = {"SCHEDULES": {name: {"queue": name, "cron": "0 3 * * *"}}}
    out = io.StringIO()
    call_command("runworker", name, "--burst", "--no-schedules", stdout=out)
    assert not Job.objects.filter(schedule_name=name).exists()
    call_command("runworker", name, "--burst", stdout=out)
    assert Job.objects.filter(schedule_name=name).count() == 1
