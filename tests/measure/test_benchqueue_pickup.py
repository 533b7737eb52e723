"""`benchqueue --pickup` runs end to end on a tiny size: a runworker child, a few jobs
enqueued one at a time, the idle cost (no timing asserted)."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

pytestmark = pytest.mark.django_db(transaction=True)


def test_benchqueue_measures_idle_pickup_with_a_runworker_child(monkeypatch):
    monkeypatch.setenv("HAMMERWEB_USE_TEST_DB", "1")  # the child works on the test database
    monkeypatch.setattr("hammerweb.measure.benchmark.pickup.IDLE_SECONDS", 0.5)
    out = StringIO()
    call_command("benchqueue", pickup=3, pickup_only=True, json=True, stdout=out, stderr=StringIO())
    report = json.loads(out.getvalue())["pickup"]
    assert report["jobs"] == 3
    assert 0 < report["p50_ms"] <= report["p99_ms"] <= report["max_ms"]
    assert report["idle_queries_per_second"] > 0


def test_pickup_only_needs_a_number_of_jobs():
    with pytest.raises(CommandError):
        call_command("benchqueue", "--pickup-only")
    with pytest.raises(CommandError):
        call_command("benchqueue", "--pickup", "-1")
