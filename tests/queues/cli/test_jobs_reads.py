"""`manage.py jobs list`, `show` and `stats`: tables and JSON, filters, and bad input as a
CommandError that changes nothing."""

from __future__ import annotations

import json
from datetime import timedelta
from uuid import uuid4

import pytest
from django.core.management import CommandError
from django.test import override_settings

from queues.api import Job, JobOutcome, JobQueue, JobStatus
from queues.models import Job as Row
from tests.conftest import unique_queue
from tests.queues.support.jobs_helpers import finished, jobs, queue_days_ago, snapshot
from tests.queues.support.spans import recording

pytestmark = pytest.mark.django_db


def test_list_filters_by_queue_status_and_age_as_json_and_as_a_table():
    name = unique_queue("cli_list")
    old = finished(queue_days_ago(3), name, 2)
    dead = finished(JobQueue(), name, 1, JobOutcome.dead("broken\nbadly"))
    JobQueue().enqueue(Job(queue_name=name))

    listed = json.loads(jobs("list", "--queue", name, "--json")[0])
    assert len(listed) == 4
    assert listed[0]["queue_name"] == name and "payload" in listed[0]
    older = json.loads(jobs("list", "--queue", name, "--older-than", "2d", "--json")[0])
    assert sorted(job["id"] for job in older) == sorted(str(i) for i in old)
    newer = json.loads(jobs("list", "--queue", name, "--newer-than", "1h", "--json")[0])
    assert len(newer) == 2
    by_status = json.loads(jobs("list", "--queue", name, "--status", "dead", "--json")[0])
    assert [job["id"] for job in by_status] == [str(dead[0])]
    assert len(json.loads(jobs("list", "--queue", name, "--limit", "3", "--json")[0])) == 3

    table = jobs("list", "--queue", name, "--status", "Dead,Completed")[0]
    lines = table.splitlines()
    assert lines[0].split()[:3] == ["ID", "QUEUE_NAME", "STATUS"]
    assert str(dead[0]) in table and "broken badly" in table  # one line per job
    assert lines[-1].startswith("3 jobs, queue")


def test_show_prints_every_field_and_the_failed_attempts():
    name = unique_queue("cli_show")
    queue = JobQueue()
    (job_id,) = finished(queue, name, 1, JobOutcome.failed("first try"))
    shown = json.loads(jobs("show", str(job_id), "--json")[0])
    assert shown["id"] == str(job_id) and shown["status"] == JobStatus.PENDING
    assert {"payload", "max_attempts", "scheduled_at", "unique_key"} <= set(shown)
    assert [(a["attempt"], a["error"]) for a in shown["attempts"]] == [(1, "first try")]
    text = jobs("show", str(job_id))[0]
    assert "failed attempts: 1" in text and "first try" in text


@pytest.fixture
def spans(monkeypatch):
    yield from recording(monkeypatch)


def test_show_prints_the_trace_id_of_the_enqueue_live_and_archived(spans):
    name = unique_queue("cli_trace")
    with spans.tracer.start_as_current_span("checkout") as request:
        (job_id,) = finished(queue_days_ago(10), name, 1)
    trace_id = format(request.get_span_context().trace_id, "032x")
    with override_settings(HAMMERWEB={"TRACING": False}):
        untraced = JobQueue().enqueue(Job(queue_name=name))
    assert f"\ntrace: {trace_id}\n" in jobs("show", str(job_id))[0]
    assert "trace:" not in jobs("show", str(untraced))[0]
    assert JobQueue().archive_jobs(timedelta(days=7), queue_name=name) == 1
    shown = jobs("show", str(job_id))[0]
    assert shown.startswith("archived at ") and f"\ntrace: {trace_id}\n" in shown
    # A malformed context is no error, and no trace line.
    Row.objects.filter(id=untraced).update(trace_context={"traceparent": "00-<b>-x-01"})
    assert "trace:" not in jobs("show", str(untraced))[0]


def test_stats_counts_each_queue_by_status_and_shows_pauses():
    name = unique_queue("cli_stats")
    finished(JobQueue(), name, 3)
    JobQueue().enqueue(Job(queue_name=name))
    JobQueue().pause_queue(name, paused_by="ops", reason="deploy")
    found = json.loads(jobs("stats", "--json")[0])[name]
    assert found["counts"][JobStatus.COMPLETED] == 3
    assert found["counts"][JobStatus.PENDING] == 1
    assert found["total"] == 4 and found["paused"] is True
    row = next(line for line in jobs("stats")[0].splitlines() if line.startswith(name))
    assert row.split()[1:4] == ["1", "0", "3"] and row.endswith("paused")


@pytest.mark.parametrize(
    "args, message",
    [
        (["list", "--status", "Sleeping"], "unknown status 'Sleeping'"),
        (["list", "--older-than", "3 days"], "is not a duration"),
        (["list", "--newer-than", "0s"], "longer than zero"),
        (["list", "--limit", "0"], "--limit must be between 1"),
        (["list", "--queue", "bad\x00name"], "control or format characters"),
        (["show", "12345"], "is not a job id"),
        (["show", str(uuid4())], "no job"),
        (["stats", "--queue", " padded "], "whitespace"),
        (["retry", "not-an-id"], "is not a job id"),
        (["retry"], "give job ids, or a filter"),
        (["delete", str(uuid4()), "--queue", "q"], "ids or a filter, not both"),
        (["cancel", str(uuid4())], "no job"),
        (["purge", "--older-than", "7x"], "is not a duration"),
        (["purge", "--older-than", "7d", "--status", "Pending"], "have not finished"),
        (["purge", "--older-than", "7d", "--batch-size", "0"], "--batch-size must be"),
        (["pause", "tab\tinside"], "control or format characters"),
        (["bogus"], "invalid choice"),
    ],
)
def test_bad_input_is_a_command_error_that_changes_nothing(args, message):
    finished(queue_days_ago(30), unique_queue("cli_bad"), 2, JobOutcome.dead("x"))
    before = snapshot()
    with pytest.raises(CommandError, match=message):
        jobs(*args)
    assert snapshot() == before


def test_show_says_why_a_job_waits_and_errors_groups_the_failures():
    from tests.queues.reads.test_error_groups import fail

    name = unique_queue("cli_why")
    queue = JobQueue()
    job_id = queue.enqueue(Job(queue_name=name))
    queue.pause_queue(name, paused_by="ann")
    out = jobs("show", str(job_id))[0]
    assert "why it waits:" in out and "paused, by ann" in out and "No live worker" in out
    shown = json.loads(jobs("show", str(job_id), "--json")[0])
    assert not shown["explanation"]["runnable"]
    assert {"paused", "no_worker"} <= {r["code"] for r in shown["explanation"]["reasons"]}

    failing = unique_queue("cli_errors")
    fail(queue, failing, [("app.Gone", "order 5 gone"), ("app.Gone", "order 6 gone")])
    table = jobs("errors", "--window", "1h")[0]
    assert "app.Gone" in table and "order <n> gone" in table and "attempts read" in table
    groups = json.loads(jobs("errors", "--json")[0])
    gone = next(g for g in groups if g["exception_class"] == "app.Gone")
    assert gone["count"] == 2 and gone["queues"] == {failing: 2} and gone["new"]
    with pytest.raises(CommandError):
        jobs("errors", "--window", "1y")
