"""measurehistory: fills failed attempts, times the history's reads and prints their plans,
on every database (EXPLAIN ANALYZE where the database has it)."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from queues.models import FailedAttempt

pytestmark = pytest.mark.django_db


def test_measurehistory_fills_times_and_explains():
    call_command("filljobs", count=200, stdout=StringIO())
    before = FailedAttempt.objects.count()
    out = StringIO()
    call_command("measurehistory", fill=300, repeat=1, stdout=out)
    text = out.getvalue()
    assert FailedAttempt.objects.count() == before + 300
    assert "inserted 300 failed attempts" in text
    assert "1h" in text and "24h" in text
    assert "-- 24h before (FailedAttempt, the hour not rolled)" in text
