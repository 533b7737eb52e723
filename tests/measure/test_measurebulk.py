"""measurebulk: a bulk retry before and after `retry_jobs`, on a few jobs (no timing
asserted), so that the command cannot rot."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from queues.api import JobStatus
from queues.models import Job

pytestmark = pytest.mark.django_db(transaction=True)


def test_measurebulk_retries_both_queues():
    out = StringIO()
    call_command("measurebulk", jobs=1500, before_jobs=1200, budget=30.0, stdout=out)
    text = out.getvalue()
    assert "before: 1,200 of 1,200 retried" in text and "after : 1,500 of 1,500" in text
    assert text.count("; 0 not Pending") == 2
    assert set(Job.objects.values_list("status", flat=True)) == {JobStatus.PENDING}
