"""Tags and meta of schedules declared in settings, on the database of the run and on
TestQueue: an entry's tags and meta are its row's (so every run carries them and the tag
filters find it), a task entry takes its task's, a changed entry rewrites them in place
(the tag rows follow the row's queue), and bad ones are errors that name the entry."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from queues.api import InvalidJob, JobOutcome
from queues.exceptions import InvalidSchedule
from queues.models import JobTag
from queues.schedules import parse
from queues.store import Match
from queues.store.sql.store import SqlStore
from tests.queues.conftest import unique_queue
from tests.queues.test_schedules import entry, row_of

T0 = datetime(2030, 1, 1, 12, 0, 30, tzinfo=UTC)


@pytest.fixture
def clocked(queue):
    queue.clock.set(T0)
    return queue


def tagged(queue, tag: str, name: str) -> list[str]:
    """The schedule names of the rows the tag filter finds in the queue `name`."""
    return [job.schedule_name for job in queue.store.find_jobs(Match(queue_name=name, tag=tag))]


def tag_rows(job_id) -> list[tuple[str, str]]:
    """The `JobTag` rows of a job on the database (memory keeps none: it reads the job's)."""
    return sorted(JobTag.objects.filter(job_id=job_id).values_list("queue_name", "tag"))


def on_database(queue) -> bool:
    return isinstance(queue.store, SqlStore)


def test_an_entrys_tags_and_meta_are_its_rows(clocked):
    name = unique_queue("sched_tags")
    schedule = parse(name, entry(name, tags=["reports", "nightly"], meta={"team": "bi"}))
    assert (schedule.tags, schedule.meta) == (("reports", "nightly"), {"team": "bi"})
    clocked.sync_schedules([schedule])
    row = row_of(clocked, name)
    assert (row.tags, row.meta) == (["reports", "nightly"], {"team": "bi"})
    assert tagged(clocked, "nightly", name) == [name]
    if on_database(clocked):
        assert tag_rows(row.id) == [(name, "nightly"), (name, "reports")]


def test_each_run_of_the_schedule_carries_its_tags(clocked):
    name = unique_queue("sched_tags_run")
    clocked.sync_schedules([parse(name, entry(name, cron="*/5 * * * *", tags=["ops"]))])
    clocked.clock.advance(timedelta(minutes=5))
    (job,) = clocked.dequeue(name)
    assert job.tags == ["ops"]
    clocked.finish_job_run(job, JobOutcome.completed({"done": True}))
    again = row_of(clocked, name)
    assert again.tags == ["ops"] and tagged(clocked, "ops", name) == [name]


def test_a_changed_entry_rewrites_tags_meta_and_the_tag_rows_queue(clocked):
    name, moved = unique_queue("sched_tags_old"), unique_queue("sched_tags_new")
    clocked.sync_schedules([parse(name, entry(name, tags=["a", "b"], meta={"v": 1}))])
    before = row_of(clocked, name)
    report = clocked.sync_schedules([parse(name, entry(name, tags=["b", "c"], meta={"v": 2}))])
    assert report.updated == [name]
    after = row_of(clocked, name)
    assert after.id == before.id and (after.tags, after.meta) == (["b", "c"], {"v": 2})
    assert tagged(clocked, "a", name) == [] and tagged(clocked, "c", name) == [name]
    clocked.sync_schedules([parse(name, entry(moved, tags=["b", "c"], meta={"v": 2}))])
    assert tagged(clocked, "b", name) == [] and tagged(clocked, "b", moved) == [name]
    if on_database(clocked):
        assert tag_rows(after.id) == [(moved, "b"), (moved, "c")]
    untagged = clocked.sync_schedules([parse(name, entry(moved))])
    assert untagged.updated == [name] and row_of(clocked, name).tags == []
    assert tagged(clocked, "b", moved) == []


def test_unchanged_tags_are_unchanged(clocked):
    name = unique_queue("sched_tags_same")
    schedules = [parse(name, entry(name, tags=["x"], meta={"k": [1, 2]}))]
    clocked.sync_schedules(schedules)
    assert clocked.sync_schedules(schedules).unchanged == [name]


def test_a_task_entry_takes_its_tasks_tags_and_meta_unless_it_names_its_own():
    task = {"task": "tests.queues.support.task_functions.charge", "cron": "0 * * * *", "args": [7]}
    schedule = parse("charge", task)
    assert (schedule.tags, schedule.meta) == (("billing", "eu"), {"team": "payments"})
    own = parse("charge", {**task, "tags": ["monthly"], "meta": {}})
    assert (own.tags, own.meta) == (("monthly",), {})


@pytest.mark.parametrize(
    ("tags", "meta", "message"),
    [
        ("nightly", None, "'tags' must be a list of strings, not str"),
        ({"a"}, None, "'tags' must be a list of strings, not set"),
        ([""], None, "a tag must be a non-empty string"),
        ([" padded"], None, "begins or ends with whitespace"),
        (["a\x00b"], None, "control or format characters"),
        (["x" * 101], None, "the limit is 100"),
        ([f"t{i}" for i in range(21)], None, "the limit is 20"),
        ([3], None, "a tag must be a non-empty string"),
        (None, ["not", "a", "dict"], "meta must be a dict"),
        (None, {1: "x"}, "meta's keys must be strings"),
        (None, {"x": float("nan")}, "not JSON-serialisable"),
    ],
)
def test_bad_tags_or_meta_are_an_error_that_names_the_entry(tags, meta, message):
    fields = {"tags": tags} if tags is not None else {}
    if meta is not None:
        fields["meta"] = meta
    with pytest.raises(InvalidSchedule, match=message) as caught:
        parse("nightly-report", entry("q", **fields))
    assert str(caught.value).startswith("HAMMERWEB['SCHEDULES']['nightly-report']: ")
    assert isinstance(caught.value, InvalidJob)


def test_a_changed_priority_is_copied_to_the_tag_rows(clocked):
    name = unique_queue("sched_tags_priority")
    clocked.sync_schedules([parse(name, entry(name, tags=["x"]))])
    clocked.sync_schedules([parse(name, entry(name, tags=["x"], priority="critical"))])
    row = row_of(clocked, name)
    assert row.priority == 4
    if on_database(clocked):
        assert list(JobTag.objects.filter(job_id=row.id).values_list("priority", flat=True)) == [4]
