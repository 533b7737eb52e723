"""Schedules declared in settings, on the database of the run and on TestQueue: the entries
checked, and a sync that creates, updates in place, disables and enables their rows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from queues.api import InvalidJob, Job, JobOutcome, JobPriority, JobStatus, MockClock, TestQueue
from queues.exceptions import InvalidSchedule
from queues.schedules import Schedule, declared, parse, problems
from queues.tasks_backend import TASK_KEY
from tests.queues.conftest import unique_queue

T0 = datetime(2030, 1, 1, 12, 0, 30, tzinfo=UTC)


@pytest.fixture
def clocked(queue):
    queue.clock.set(T0)
    return queue


def entry(queue_name: str, **fields) -> dict:
    return {"queue": queue_name, "cron": "0 3 * * *", **fields}


def rows_of(queue, name: str) -> list[Job]:
    return [job for job in queue.store.declared_jobs() if job.schedule_name == name]


def values(job: Job) -> dict:
    return {f.attname: getattr(job, f.attname) for f in Job._meta.concrete_fields}


def row_of(queue, name: str) -> Job:
    (row,) = rows_of(queue, name)
    return row


# The entries ----------------------------------------------------------------------------------
def test_an_entry_is_read_with_its_defaults():
    (schedule,) = declared({"nightly": {"queue": "reports", "cron": "0 3 * * *"}})
    assert schedule == Schedule(name="nightly", queue="reports", cron="0 3 * * *")
    full = parse(
        "full",
        entry(
            "reports",
            timezone="Europe/Paris",
            payload={"kind": "daily"},
            priority="high",
            max_attempts=5,
            timeout=90,
        ),
    )
    assert (full.timezone, full.payload, full.priority) == ("Europe/Paris", {"kind": "daily"}, 3)
    assert (full.max_attempts, full.timeout) == (5, timedelta(seconds=90))
    assert parse("p", entry("q", priority=0)).priority == JobPriority.BACKGROUND


def test_a_task_entry_runs_the_task_with_its_queue_and_arguments():
    schedule = parse(
        "t",
        {
            "task": "tests.queues.support.task_functions.get_attempt",
            "cron": "0 * * * *",
            "args": ["nightly"],
        },
    )
    assert schedule.queue == "default" and schedule.payload["args"] == ["nightly"]
    assert schedule.payload[TASK_KEY]["path"] == "tests.queues.support.task_functions.get_attempt"
    moved = parse(
        "t",
        {
            "task": "tests.queues.support.task_functions.noop_task",
            "cron": "0 * * * *",
            "queue": "elsewhere",
        },
    )
    assert moved.queue == "elsewhere"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"cron": "0 3 * * *"}, "needs a 'queue'"),
        ({"queue": "q"}, "needs a 'cron'"),
        (entry("q", cron="61 * * * *"), "invalid cron expression"),
        (entry("q", cron="* * *"), "has 3 fields"),
        (entry("q", timezone="Mars/Olympus"), "unknown time zone"),
        (entry(" q"), "must not begin or end with whitespace"),
        (entry(""), "a queue name must be a non-empty string"),
        (entry("q", payload={"x": float("nan")}), "not JSON-serialisable"),
        (entry("q", priority="urgent"), "unknown priority 'urgent'"),
        (entry("q", priority=7), "unknown priority 7"),
        (entry("q", max_attempts=0), "between 1 and"),
        (entry("q", max_attempts="3"), "whole number"),
        (entry("q", timeout=-1), "timeout"),
        (entry("q", timeout="10m"), "timeout"),
        (entry("q", colour="red"), "unknown key 'colour'"),
        (entry("q", args=[1]), "'args' and 'kwargs' are for a 'task'"),
        (
            {"task": "tests.queues.support.task_functions.missing", "cron": "* * * * *"},
            "cannot import",
        ),
        ({"task": "queues.schedules.parse", "cron": "* * * * *"}, "is not a django.tasks task"),
        (
            {
                "task": "tests.queues.support.task_functions.noop_task",
                "cron": "* * * * *",
                "payload": {},
            },
            "not a 'payload'",
        ),
        ("0 3 * * *", "must be a dict"),
    ],
)
def test_a_bad_entry_is_an_error_that_names_it(value, message):
    with pytest.raises(InvalidSchedule, match=message) as caught:
        parse("nightly-report", value)
    assert str(caught.value).startswith("HAMMERWEB['SCHEDULES']['nightly-report']: ")
    assert isinstance(caught.value, InvalidJob)


def test_every_bad_entry_is_listed():
    found = problems({"a": entry("q"), "b": entry("q", cron="nope"), "": entry("q"), "c": 3})
    assert len(found) == 3
    assert [p.split(":")[0] for p in found] == [
        "HAMMERWEB['SCHEDULES']['']",
        "HAMMERWEB['SCHEDULES']['b']",
        "HAMMERWEB['SCHEDULES']['c']",
    ]
    assert problems([entry("q")]) == ["HAMMERWEB['SCHEDULES'] must be a dict of schedules by name"]


def test_the_settings_are_read(settings):
    settings.HAMMERWEB = {"SCHEDULES": {"n": entry("q")}}
    assert [s.name for s in declared()] == ["n"]
    del settings.HAMMERWEB
    assert declared() == [] and problems() == []


# The sync --------------------------------------------------------------------------------------
def test_a_sync_creates_one_recurring_row_per_entry(clocked):
    name = unique_queue("sched")
    report = clocked.sync_schedules(
        [parse(f"{name}-a", entry(name)), parse(f"{name}-b", entry(name, cron="*/5 * * * *"))]
    )
    assert report.created == [f"{name}-a", f"{name}-b"]
    a, b = row_of(clocked, f"{name}-a"), row_of(clocked, f"{name}-b")
    assert a.recurring and a.cron_schedule == "0 3 * * *" and a.status == JobStatus.PENDING
    assert a.next_run_at == a.scheduled_at == datetime(2030, 1, 2, 3, tzinfo=UTC)
    assert b.next_run_at == datetime(2030, 1, 1, 12, 5, tzinfo=UTC)
    assert a.unique_key is None and a.unique_slot is not None


def test_a_second_sync_changes_nothing(clocked):
    name = unique_queue("sched_again")
    schedules = [parse(name, entry(name, payload={"n": 1}))]
    clocked.sync_schedules(schedules)
    first = row_of(clocked, name)
    clocked.clock.advance(timedelta(minutes=1))
    report = clocked.sync_schedules(schedules)
    assert report.unchanged == [name] and not report.created and not report.updated
    assert values(row_of(clocked, name)) == values(first)


def test_a_changed_expression_updates_the_row_in_place(clocked):
    name = unique_queue("sched_cron")
    clocked.sync_schedules([parse(name, entry(name))])
    before = row_of(clocked, name)
    clocked.clock.advance(timedelta(hours=1))
    new = parse(
        name,
        entry(
            name, cron="30 * * * *", timezone="Asia/Kolkata", payload={"v": 2}, priority="critical"
        ),
    )
    report = clocked.sync_schedules([new])
    assert report.updated == [name]
    after = row_of(clocked, name)
    assert after.id == before.id
    assert (after.cron_schedule, after.timezone, after.payload) == (
        "30 * * * *",
        "Asia/Kolkata",
        {"v": 2},
    )
    assert after.priority == JobPriority.CRITICAL
    # 13:00:30 UTC is 18:30:30 in Kolkata: the next :30 there is 19:30, 14:00 UTC.
    assert after.next_run_at == after.scheduled_at == datetime(2030, 1, 1, 14, tzinfo=UTC)


def test_a_changed_payload_keeps_the_next_run(clocked):
    name = unique_queue("sched_payload")
    clocked.sync_schedules([parse(name, entry(name))])
    before = row_of(clocked, name)
    clocked.sync_schedules([parse(name, entry(name, payload={"v": 2}, max_attempts=1))])
    after = row_of(clocked, name)
    assert (after.payload, after.max_attempts) == ({"v": 2}, 1)
    assert after.next_run_at == before.next_run_at


def test_a_removed_entry_is_disabled_and_enabled_again_when_it_comes_back(clocked):
    name = unique_queue("sched_removed")
    kept = parse(f"{name}-kept", entry(name))
    gone = parse(f"{name}-gone", entry(name, cron="* * * * * *"))
    clocked.sync_schedules([kept, gone])
    clocked.clock.advance(timedelta(hours=2))
    report = clocked.sync_schedules([kept])
    assert report.disabled == [f"{name}-gone"] and report.unchanged == [f"{name}-kept"]
    row = row_of(clocked, f"{name}-gone")
    assert not row.recurring and row.schedule_removed_at == clocked.now()
    assert clocked.dequeue_one(name) is None, "a removed schedule's occurrence is held"
    assert clocked.sync_schedules([kept]).disabled == [], "disabled once"
    clocked.clock.advance(timedelta(minutes=1))
    report = clocked.sync_schedules([kept, gone])
    assert report.enabled == [f"{name}-gone"]
    back = row_of(clocked, f"{name}-gone")
    assert back.id == row.id and back.recurring and back.schedule_removed_at is None
    assert back.next_run_at == clocked.now() + timedelta(seconds=1), "from now, no catch-up"


def test_a_schedule_an_operator_disabled_stays_disabled(clocked):
    name = unique_queue("sched_operator")
    clocked.sync_schedules([parse(name, entry(name))])
    row = row_of(clocked, name)
    clocked.disable_recurring_job(row.id)
    assert clocked.sync_schedules([parse(name, entry(name))]).unchanged == [name]
    report = clocked.sync_schedules([parse(name, entry(name, payload={"v": 3}))])
    assert report.updated == [name]
    after = row_of(clocked, name)
    assert not after.recurring and after.payload == {"v": 3}
    # Gone and back: the sync disables it (already so) and then enables it again.
    clocked.sync_schedules([])
    assert clocked.sync_schedules([parse(name, entry(name))]).enabled == [name]
    assert row_of(clocked, name).recurring


def test_a_deleted_row_comes_back_at_the_next_sync(clocked):
    name = unique_queue("sched_deleted")
    clocked.sync_schedules([parse(name, entry(name))])
    clocked.delete_job(row_of(clocked, name).id)
    assert clocked.sync_schedules([parse(name, entry(name))]).created == [name]


def test_a_declared_schedule_runs_on_the_moved_clock_and_is_rescheduled_in_place(clocked):
    name = unique_queue("sched_runs")
    clocked.sync_schedules([parse(name, entry(name, cron="*/10 * * * *"))])
    row = row_of(clocked, name)
    assert clocked.dequeue_one(name) is None
    clocked.clock.set(datetime(2030, 1, 1, 12, 10, tzinfo=UTC))
    job = clocked.dequeue_one(name)
    assert job.id == row.id
    recorded = clocked.finish_job_run(job, JobOutcome.completed())
    assert recorded.next_run_at == datetime(2030, 1, 1, 12, 20, tzinfo=UTC)
    assert row_of(clocked, name).schedule_name == name, "the same row, still declared"


def test_a_sync_while_the_row_runs_takes_effect_for_the_run_after(clocked):
    name = unique_queue("sched_running")
    clocked.sync_schedules([parse(name, entry(name, cron="*/10 * * * *"))])
    clocked.clock.set(datetime(2030, 1, 1, 12, 10, tzinfo=UTC))
    job = clocked.dequeue_one(name)
    clocked.sync_schedules([parse(name, entry(name, cron="*/15 * * * *"))])
    assert row_of(clocked, name).cron_schedule == "*/15 * * * *"
    clocked.finish_job_run(job, JobOutcome.completed())
    # The ending run rescheduled by the expression it was claimed with, once.
    assert row_of(clocked, name).next_run_at == datetime(2030, 1, 1, 12, 20, tzinfo=UTC)
    clocked.clock.set(datetime(2030, 1, 1, 12, 20, tzinfo=UTC))
    again = clocked.dequeue_one(name)
    recorded = clocked.finish_job_run(again, JobOutcome.completed())
    assert recorded.next_run_at == datetime(2030, 1, 1, 12, 30, tzinfo=UTC)
    clocked.clock.set(datetime(2030, 1, 1, 12, 30, tzinfo=UTC))
    third = clocked.dequeue_one(name)
    assert clocked.finish_job_run(third, JobOutcome.completed()).next_run_at == datetime(
        2030, 1, 1, 12, 45, tzinfo=UTC
    )


def test_a_schedules_name_is_not_a_unique_key():
    queue = TestQueue(clock=MockClock(T0))
    name = unique_queue("sched_namespace")
    queue.sync_schedules([parse("report", entry(name))])
    assert queue.enqueue_unique(Job(queue_name=name, unique_key="report")).created
