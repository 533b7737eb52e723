"""filljobs and measurepages."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from queues.api import JobStatus
from queues.models import Job

pytestmark = pytest.mark.django_db


def test_filljobs_writes_a_mix_the_constraints_accept():
    out = StringIO()
    call_command("filljobs", count=600, chunk=250, stdout=out)
    assert Job.objects.count() == 600
    statuses = set(Job.objects.values_list("status", flat=True))
    assert {JobStatus.COMPLETED, JobStatus.PENDING, JobStatus.DEAD} <= statuses
    assert len(set(Job.objects.values_list("queue_name", flat=True))) > 3
    running = Job.objects.filter(status=JobStatus.RUNNING).first()
    assert running is None or running.run_token is not None
    assert "inserted 600 jobs" in out.getvalue()


def test_measurepages_times_every_page():
    call_command("filljobs", count=300, stdout=StringIO())
    out = StringIO()
    call_command("measurepages", repeat=1, budget_ms=10_000, stdout=out)
    text = out.getvalue()
    for label in (
        "overview",
        "page 2",
        "search payload text",
        "job",
        "reaper",
        "workers",
        "history 7d",
        "error groups, 1h",
        "error groups, 7d",
    ):
        assert label in text
    assert "every page under" in text
