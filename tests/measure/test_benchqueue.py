"""`benchqueue` runs end to end on a tiny size so that it cannot rot (no timing asserted)."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

pytestmark = pytest.mark.django_db(transaction=True)


def test_benchqueue_reports_every_figure_against_the_raw_limit():
    out = StringIO()
    call_command(
        "benchqueue", jobs=50, json=True, no_runworker=True, stdout=out, stderr=StringIO()
    )
    report = json.loads(out.getvalue())
    labels = {row["label"] for row in report["figures"]}
    assert {
        "single",
        "batch of 10",
        "batch of 50",
        "batch of 100",
        "hammerweb, batch 100",
        "hammerweb, batch 1, limited to 1",
        "hammerweb, batch 100, limited to 100",
        "raw SQL limit, batch 100",
        "single-job worker",
        "batch worker (10, sequential)",
        "batch worker (50, concurrency 10)",
        "enqueue (one by one)",
        "enqueue_many",
    } <= labels
    for row in report["figures"]:
        assert row["jobs"] == 50, row
        assert row["jobs_per_second"] > 0, row
    assert report["meta"]["jobs"] == 50


def test_benchqueue_table_and_bad_sizes():
    out = StringIO()
    call_command("benchqueue", jobs=20, no_runworker=True, stdout=out, stderr=StringIO())
    assert "raw SQL limit, batch 100" in out.getvalue()
    with pytest.raises(CommandError):
        call_command("benchqueue", "--jobs", "0")


def test_benchqueue_repeats_and_reports_each_median():
    out = StringIO()
    call_command(
        "benchqueue", jobs=10, repeat=3, json=True, no_runworker=True, stdout=out,
        stderr=StringIO(),
    )  # fmt: skip
    report = json.loads(out.getvalue())
    assert report["meta"]["repeat"] == 3
    assert len({row["label"] for row in report["figures"]}) == len(report["figures"])


def test_benchqueue_runs_runworker_on_every_handler_shape(monkeypatch):
    # The children work on this test database, as the tests' other runworker processes.
    monkeypatch.setenv("HAMMERWEB_USE_TEST_DB", "1")
    out = StringIO()
    call_command("benchqueue", jobs=5, json=True, stdout=out, stderr=StringIO())
    rows = [row for row in json.loads(out.getvalue())["figures"] if row["group"] == "runworker"]
    assert [row["label"] for row in rows] == [
        f"{shape}, processes {processes}"
        for processes in (1, 2)
        for shape in (
            "returns None",
            'returns {"ok": True, "n": i}',
            'returns {"ok": True, "n": i}, a 5-minute timeout',
            "@task returning a + b",
            "writes one row with the ORM",
            "returns None, one enqueue_batch",
            'returns {"ok": True, "n": i}, jobs on 4 queues',
        )
    ]
    # Each figure checked that the child completed its 5 jobs (it raises otherwise).
    assert all(row["jobs"] == 5 and row["jobs_per_second"] > 0 for row in rows)
    # The child's CPU (its start-up alone is more than a clock tick) and, on a server of
    # this machine, the server's; SQLite's work is the worker's.
    assert all(row["worker_cpu_us_per_job"] > 0 for row in rows)
    # The statements of every process of the child, counted: its 5 jobs took at least a
    # claim and a write, and its start-up a few reads more.
    assert all(row["statements_per_100_jobs"] >= 3 * 100 / 5 for row in rows), rows
    servers = [row["server_cpu_us_per_job"] for row in rows]
    if connection.vendor == "sqlite":
        assert servers == [None] * len(rows)
    else:
        assert all(server is not None and server >= 0 for server in servers)


def test_medians_pick_the_middle_run_of_each_measurement():
    from hammerweb.measure.benchmark.runs import Figure, medians

    rounds = [
        [Figure("claim", "single", 10, 1.0), Figure("claim", "batch of 10", 10, 0.1)],
        [Figure("claim", "single", 10, 4.0), Figure("claim", "batch of 10", 10, 0.3)],
        [Figure("claim", "single", 10, 2.0), Figure("claim", "batch of 10", 10, 0.2)],
    ]
    single, batch = medians(rounds)
    assert (single.label, single.seconds) == ("single", 2.0)
    assert (batch.label, batch.seconds) == ("batch of 10", 0.2)
