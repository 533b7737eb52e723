"""Syncs racing: a deploy that restarts many workers at once syncs the same schedules from
many connections and processes at the same time, and makes one row per schedule."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from queues.api import JobQueue
from queues.models import Job
from queues.schedules import parse
from tests.conftest import ROOT
from tests.queues.conftest import unique_queue
from tests.queues.engine.test_concurrency import in_threads

BASE_DIR = ROOT
pytestmark = pytest.mark.django_db(transaction=True)


def _entries(name: str, cron: str = "0 3 * * *") -> dict:
    return {f"{name}-{i}": {"queue": name, "cron": cron, "payload": {"i": i}} for i in range(4)}


def _declared_rows(name: str) -> list[Job]:
    return list(Job.objects.filter(queue_name=name, schedule_name__isnull=False))


def _sync_from_threads(schedules) -> list:
    reports: list = []
    in_threads([lambda: reports.append(JobQueue().sync_schedules(schedules))] * 8)
    return reports


def test_eight_threads_syncing_at_once_make_one_row_per_schedule():
    name = unique_queue("sync_race")
    for cron, what in (("0 3 * * *", "created"), ("0 4 * * *", "updated")):
        schedules = [parse(k, v) for k, v in _entries(name, cron).items()]
        names = sorted(s.name for s in schedules)
        reports = _sync_from_threads(schedules)
        rows = _declared_rows(name)
        assert sorted(row.schedule_name for row in rows) == names
        assert {row.cron_schedule for row in rows} == {cron}
        # Each schedule created (then updated) by one of the syncs, left alone by the rest.
        assert sorted(n for report in reports for n in getattr(report, what)) == names
    _sync_from_threads(schedules[:1])
    disabled = [row for row in _declared_rows(name) if not row.recurring]
    assert len(disabled) == 3 and len(_declared_rows(name)) == 4


def test_syncschedules_in_four_processes_at_once_makes_one_row_per_schedule():
    name = unique_queue("sync_processes")
    env = {
        **os.environ,
        "HAMMERWEB_USE_TEST_DB": "1",
        "DJANGO_SETTINGS_MODULE": "tests.queues.support.schedule_settings",
        "HAMMERWEB_TEST_SCHEDULES": json.dumps(_entries(name)),
    }
    command = [sys.executable, "manage.py", "syncschedules"]
    procs = [
        subprocess.Popen(command, cwd=BASE_DIR, env=env, stdout=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    outputs = [proc.communicate(timeout=120)[0] for proc in procs]
    assert [proc.returncode for proc in procs] == [0] * 4, outputs
    assert len(_declared_rows(name)) == 4
    created = sum(int(re.search(r"created (\d+)", out)[1]) for out in outputs)
    assert created == 4, outputs
