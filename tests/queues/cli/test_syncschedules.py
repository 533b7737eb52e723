"""`manage.py syncschedules` and the system check of `HAMMERWEB["SCHEDULES"]`."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.core.management.base import SystemCheckError

from queues.checks import check_schedules
from queues.models import Job
from tests.conftest import unique_queue

pytestmark = pytest.mark.django_db


def test_syncschedules_creates_then_reports_unchanged(settings):
    name = unique_queue("cmd_sync")
    settings.HAMMERWEB = {"SCHEDULES": {name: {"queue": name, "cron": "0 3 * * *"}}}
    out = StringIO()
    call_command("syncschedules", stdout=out)
    assert f"created 1 ({name})" in out.getvalue()
    call_command("syncschedules", stdout=out)
    assert "unchanged 1" in out.getvalue()
    settings.HAMMERWEB = {}
    call_command("syncschedules", stdout=out)
    assert f"disabled 1 ({name})" in out.getvalue()
    assert Job.objects.get(schedule_name=name).recurring is False


def test_a_bad_entry_fails_the_checks_and_the_command_naming_it(settings):
    settings.HAMMERWEB = {
        "SCHEDULES": {
            "nightly": {"queue": "reports", "cron": "0 25 * * *"},
            "hourly": {"queue": "reports", "cron": "0 * * * *", "timezone": "Nowhere/Land"},
            "fine": {"queue": "reports", "cron": "0 * * * *"},
        }
    }
    errors = check_schedules()
    assert [e.id for e in errors] == ["queues.E030", "queues.E030"]
    assert errors[0].msg.startswith("HAMMERWEB['SCHEDULES']['hourly']: unknown time zone")
    assert errors[1].msg.startswith("HAMMERWEB['SCHEDULES']['nightly']: invalid cron")
    with pytest.raises(SystemCheckError, match="nightly"):
        call_command("check")
    with pytest.raises(SystemCheckError, match="hourly"):
        call_command("syncschedules", skip_checks=False)
    with pytest.raises(CommandError, match="hourly"):
        call_command("syncschedules")  # checks skipped: the command still refuses
    assert not Job.objects.filter(schedule_name__isnull=False).exists()


def test_no_setting_is_no_error(settings):
    settings.HAMMERWEB = {"SCHEDULES": {}}
    assert check_schedules() == []
    del settings.HAMMERWEB
    assert check_schedules() == []
    settings.HAMMERWEB = {"SCHEDULES": ["not", "a", "dict"]}
    assert "must be a dict" in check_schedules()[0].msg
