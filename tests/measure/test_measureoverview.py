from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from queues.api import Job, JobQueue

pytestmark = pytest.mark.django_db


def test_measureoverview_reports_the_database_time():
    JobQueue().enqueue(Job(queue_name="emails", payload={}))
    out = io.StringIO()
    # The budget is the command's check on a big table; here only the report is under test.
    call_command("measureoverview", "--repeat", "3", "--budget-ms", "10000", stdout=out)
    assert "1 jobs;" in out.getvalue()
    assert "overview: median" in out.getvalue()
    assert "5 queries" in out.getvalue()


def test_measuremetrics_reports_the_database_time_of_a_scrape():
    JobQueue().enqueue(Job(queue_name="emails", payload={}))
    out = io.StringIO()
    call_command("measuremetrics", "--repeat", "3", "--budget-ms", "10000", stdout=out)
    assert "1 jobs;" in out.getvalue()
    assert "scrape: median" in out.getvalue()
