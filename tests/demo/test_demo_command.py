"""The demo app: installed only with HAMMERWEB_DEMO=1; `manage.py demo` without serving."""

from __future__ import annotations

import os

import pytest
from django.apps import apps
from django.contrib.auth.models import User
from django.core.management import call_command, get_commands
from django.test import modify_settings

from queues.api import JobStatus
from queues.models import Batch, Job, Workflow


@pytest.mark.skipif(os.environ.get("HAMMERWEB_DEMO") == "1", reason="HAMMERWEB_DEMO=1 is set")
def test_the_demo_app_is_not_installed_unless_asked_for():
    assert not apps.is_installed("demo")
    assert "demo" not in get_commands()


@pytest.mark.django_db
@modify_settings(INSTALLED_APPS={"append": "demo"})
def test_demo_without_serving_loads_once(capsys):
    call_command("demo", no_serve=True)
    jobs = Job.objects.count()
    assert jobs > 100
    assert Batch.objects.count() == 1 and Workflow.objects.count() == 1
    assert Job.objects.filter(cron_schedule__isnull=False).count() == 3
    assert Job.objects.filter(status=JobStatus.DEAD).exists()
    demo = User.objects.get(username="demo")
    assert demo.is_staff and demo.check_password("demo")
    viewer = User.objects.get(username="viewer")
    assert viewer.is_staff and not viewer.has_perm("queues.change_job")
    call_command("demo", no_serve=True)
    assert Job.objects.count() == jobs
    assert "already holds jobs" in capsys.readouterr().out
