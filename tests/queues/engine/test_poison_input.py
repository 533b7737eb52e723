"""Poison input: what no database can store is refused with a typed error before anything is
written, or, for the text of a failure, made storable, so that the failure is always
recorded. Each case runs on the database of the run and on TestQueue, which refuse and store
alike (SQLite stores what PostgreSQL and MariaDB refuse; the rules are theirs)."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest

from queues.api import (
    DequeueOptions,
    InvalidBatch,
    InvalidJob,
    InvalidPayload,
    InvalidQueueName,
    InvalidWorkflow,
    Job,
    JobBatch,
    JobGroup,
    JobOutcome,
    JobStatus,
    QueueError,
    TestQueue,
)
from queues.text import MAX_STORED_TEXT, REPLACEMENT
from queues.validation import MAX_ATTEMPTS, MAX_DURATION, MAX_JSON_NESTING
from tests.queues.conftest import unique_queue

EAST_OF_YEAR_ONE = datetime(1, 1, 1, 1, tzinfo=timezone(timedelta(hours=5)))  # before UTC's year 1


def nested(depth: int, kind: str = "list"):
    value: object = 1
    for _ in range(depth):
        value = [value] if kind == "list" else {"k": value}
    return value


def bad_jobs(name: str):
    yield "lone surrogate in payload", InvalidPayload, Job(queue_name=name, payload={"a": "\ud800"})
    yield "lone surrogate as a key", InvalidPayload, Job(queue_name=name, payload={"\udc00": 1})
    yield "NUL in payload", InvalidPayload, Job(queue_name=name, payload={"a": "x\x00"})
    yield "payload None", InvalidPayload, Job(queue_name=name, payload=None)
    for kind in ("list", "dict"):
        deep = nested(MAX_JSON_NESTING + 1, kind)
        yield f"{kind}s nested too deep", InvalidPayload, Job(queue_name=name, payload=deep)
    yield "nested past recursion", InvalidPayload, Job(queue_name=name, payload=nested(100_000))
    yield "surrogate in queue", InvalidQueueName, Job(queue_name=name + "\ud800")
    yield "DEL in queue", InvalidQueueName, Job(queue_name=name + "\x7f")
    yield "zero-width space in queue", InvalidQueueName, Job(queue_name=name + "\u200b")
    yield "trailing space in queue", InvalidQueueName, Job(queue_name=name + " ")
    yield "leading tab in queue", InvalidQueueName, Job(queue_name="\t" + name)
    yield "max_attempts past int", InvalidJob, Job(queue_name=name, max_attempts=MAX_ATTEMPTS + 1)
    yield "attempts past int", InvalidJob, Job(queue_name=name, attempts=2**63)
    yield (
        "timeout over the limit",
        InvalidJob,
        Job(queue_name=name, timeout=MAX_DURATION + timedelta(seconds=1)),
    )
    yield "timeout past bigint", InvalidJob, Job(queue_name=name, timeout=timedelta.max)
    yield "before UTC's year 1", InvalidJob, Job(queue_name=name, scheduled_at=EAST_OF_YEAR_ONE)
    yield "naive next run", InvalidJob, Job(queue_name=name, next_run_at=datetime(2030, 1, 1))
    yield "id not a UUID", InvalidJob, Job(queue_name=name, id="junk")
    yield "a run token", InvalidJob, Job(queue_name=name, run_token=uuid.uuid4())


def test_each_poison_job_is_refused_and_nothing_is_written(queue):
    name = unique_queue("poison")
    for label, error, job in bad_jobs(name):
        with pytest.raises(error) as info:
            queue.enqueue(job)
        assert isinstance(info.value, QueueError) and isinstance(info.value, ValueError), label
    assert sum(queue.get_job_counts_by_status(name).values()) == 0


def test_what_every_database_holds_is_accepted_and_read_back(queue):
    name = unique_queue("poison_ok")
    payloads = [
        {"emoji": "😀🐍", "astral key 𝄞": True},
        nested(MAX_JSON_NESTING),
        nested(MAX_JSON_NESTING, "dict"),
        {"backslash u0000 is text": "\\u0000", "escaped": "\\\\u0000"},
        {"big": 10**30, "small": -(10**30)},
    ]
    ids = [queue.enqueue(Job(queue_name=name, payload=p)) for p in payloads]
    assert [queue.get_job(i).payload for i in ids] == payloads
    edge = Job(queue_name="😀" * 255, max_attempts=MAX_ATTEMPTS, timeout=MAX_DURATION)
    stored = queue.get_job(queue.enqueue(edge))
    assert (stored.queue_name, stored.max_attempts, stored.timeout) == (
        "😀" * 255,
        MAX_ATTEMPTS,
        MAX_DURATION,
    )


def test_bad_batches_and_workflows_are_refused(queue):
    name = unique_queue("poison_groups")
    deep = {"a": nested(MAX_JSON_NESTING)}
    for label, make in [
        ("long batch name", lambda: JobBatch("b" * 256, jobs=[Job(queue_name=name)])),
        ("NUL in batch name", lambda: JobBatch("b\x00", jobs=[Job(queue_name=name)])),
        ("surrogate in batch name", lambda: JobBatch("b\ud800", jobs=[Job(queue_name=name)])),
        ("NUL in metadata", lambda: JobBatch("b", [Job(queue_name=name)], metadata={"a": "\x00"})),
        ("deep metadata", lambda: JobBatch("b", [Job(queue_name=name)], metadata=deep)),
    ]:
        with pytest.raises(InvalidBatch):
            queue.enqueue_batch(make())
            pytest.fail(label)
    for bad_name in ("w" * 256, "w\x00", "w\ud800"):
        with pytest.raises(InvalidWorkflow):
            JobGroup(bad_name)
    assert sum(queue.get_job_counts_by_status(name).values()) == 0


def _run(queue, name: str, **fields) -> Job:
    queue.enqueue(Job(queue_name=name, **fields))
    return queue.dequeue_one(name)


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        ("bad\x00thing", f"bad{REPLACEMENT}thing"),
        ("lone \ud800 surrogate", f"lone {REPLACEMENT} surrogate"),
        ("pair \ud83d\ude00 spelt apart", "pair 😀 spelt apart"),
        ("astral 😀 and NUL \x00", f"astral 😀 and NUL {REPLACEMENT}"),
    ],
)
def test_any_error_text_is_recorded(queue, given, stored):
    name = unique_queue("poison_error")
    assert JobOutcome.failed(given).error == stored
    run = _run(queue, name, max_attempts=1)
    recorded = queue.finish_job_run(run, JobOutcome.failed(given))
    assert recorded.status == JobStatus.DEAD
    assert queue.get_job(run.id).error_message == stored


def test_megabytes_of_error_text_are_cut_to_the_limit(queue):
    name = unique_queue("poison_long")
    text = "Traceback (most recent call last):\n" + "x" * 50_000_000 + "\nValueError: the end"
    run = _run(queue, name, max_attempts=1)
    assert queue.finish_job_run(run, JobOutcome.failed(text)).status == JobStatus.DEAD
    error = queue.get_job(run.id).error_message
    assert len(error) <= MAX_STORED_TEXT
    assert error.startswith("Traceback (most recent call last):\nxxx")
    assert error.endswith("xxx\nValueError: the end")
    mark = re.search(r"\n\[\.\.\. (\d+) characters cut \.\.\.\]\n", error)
    # The mark tells exactly how much of the text is not shown.
    assert len(error) - len(mark.group()) + int(mark.group(1)) == len(text)


def test_every_outcome_and_operator_reason_is_cleaned(queue):
    name = unique_queue("poison_reasons")
    junk = "why\x00\ud800" + "y" * (MAX_STORED_TEXT + 10)
    outcomes = [
        JobOutcome.dead(junk),
        JobOutcome.timed_out(junk),
        JobOutcome.retry(queue.now(), junk),
        JobOutcome("failed", error=junk),  # built directly, not through a class method
    ]
    for outcome in outcomes:
        run = _run(queue, name)
        assert queue.finish_job_run(run, outcome) is not None
        error = queue.get_job(run.id).error_message
        assert error.startswith(f"why{REPLACEMENT}{REPLACEMENT}y") and len(error) <= MAX_STORED_TEXT
    cancelled = queue.enqueue(Job(queue_name=name))
    queue.cancel_job(cancelled, junk)
    dead = queue.enqueue(Job(queue_name=name))
    queue.mark_job_dead(dead, junk)
    for job_id in (cancelled, dead):
        error = queue.get_job(job_id).error_message
        assert error.startswith(f"why{REPLACEMENT}") and len(error) <= MAX_STORED_TEXT


def test_several_outcomes_with_poison_text_are_recorded_together(queue):
    name = unique_queue("poison_many")
    queue.enqueue_many([Job(queue_name=name, max_attempts=1) for _ in range(4)])
    runs = queue.dequeue(name, DequeueOptions.batch(4))
    outcomes = [
        JobOutcome.completed(),
        JobOutcome.failed("a\x00"),
        JobOutcome.completed(),
        JobOutcome.failed("b\ud800" * 40_000),
    ]
    recorded = queue.finish_job_runs(list(zip(runs, outcomes, strict=True)))
    assert [r.status for r in recorded] == ["Completed", "Dead", "Completed", "Dead"]
    assert queue.get_job(runs[1].id).error_message == f"a{REPLACEMENT}"


@pytest.mark.parametrize(
    "result",
    [{"a": "\ud800"}, {"a": "\x00"}, nested(MAX_JSON_NESTING + 1), {1, 2}, object()],
    ids=["surrogate", "NUL", "deep", "set", "object"],
)
def test_a_result_no_database_holds_is_refused_and_the_run_stays(queue, result):
    name = unique_queue("poison_result")
    run = _run(queue, name)
    with pytest.raises(InvalidPayload):
        queue.finish_job_run(run, JobOutcome.completed(result))
    assert queue.get_job(run.id).status == JobStatus.RUNNING


def test_times_out_of_range_are_refused(queue):
    name = unique_queue("poison_time")
    run = _run(queue, name)
    with pytest.raises(InvalidJob):
        queue.finish_job_run(run, JobOutcome.retry(EAST_OF_YEAR_ONE))
    with pytest.raises(InvalidJob):
        queue.retry_job(run.id, at=EAST_OF_YEAR_ONE)
    assert queue.get_job(run.id).status == JobStatus.RUNNING
    with pytest.raises(ValueError):
        queue.heartbeat_job(run, timedelta.max)
    with pytest.raises(ValueError):
        DequeueOptions().with_lease_duration(MAX_DURATION * 2)


@pytest.mark.parametrize("bad", ["", " q", "q ", "q\x00", "q\ud800", "q" * 256])
def test_queue_names_are_checked_by_every_method_that_takes_one(queue, bad):
    for call in (
        lambda: queue.dequeue(bad),
        lambda: queue.pause_queue(bad),
        lambda: queue.resume_queue(bad),
        lambda: queue.is_queue_paused(bad),
        lambda: queue.get_job_counts_by_status(bad),
        lambda: queue.requeue_stale_jobs(bad),
    ):
        with pytest.raises(InvalidQueueName):
            call()


def test_pause_labels_and_reasons_are_cleaned_and_cut(queue):
    name = unique_queue("poison_pause")
    queue.pause_queue(name, paused_by="op\x00" + "p" * 300, reason="deploy\x00\ud800")
    pause = _pause(queue, name)
    assert pause.paused_by == f"op{REPLACEMENT}" + "p" * 252
    assert pause.reason == f"deploy{REPLACEMENT}{REPLACEMENT}"
    queue.requeue_stale_jobs(ran_by="reaper\x00" + "r" * 300)
    assert _last_reaper_run(queue).ran_by == f"reaper{REPLACEMENT}" + "r" * 248


def _pause(queue, name):
    if not isinstance(queue, TestQueue):
        from queues.models import QueuePause

        return QueuePause.objects.get(queue_name=name)
    return queue.store.pauses[name]


def _last_reaper_run(queue):
    if not isinstance(queue, TestQueue):
        from queues.models import ReaperRun

        return ReaperRun.objects.order_by("-id").first()
    return queue.reaper_runs[-1]


def test_queue_names_differing_in_case_or_astral_characters_are_distinct(queue):
    """Also on MariaDB, whose default collations compare case-insensitively and weigh every
    character outside the Basic Multilingual Plane alike (migration 0008 gives the queue-name
    columns utf8mb4_bin)."""
    name = unique_queue("poison_case")
    queue.enqueue(Job(queue_name=name + "_a"))
    queue.enqueue(Job(queue_name=name + "😀"))
    queue.pause_queue(name + "_a")
    assert not queue.is_queue_paused(name + "_A")
    assert queue.get_job_counts_by_status(name + "🐍")[JobStatus.PENDING] == 0
    assert queue.get_job_counts_by_status(name + "😀")[JobStatus.PENDING] == 1
    assert queue.dequeue(name + "_A") == []
    assert queue.dequeue(name + "🐍") == []


def test_an_aware_time_keeps_its_instant(queue):
    name = unique_queue("poison_utc")
    run = _run(queue, name)
    at = datetime(2031, 1, 1, tzinfo=UTC)
    queue.finish_job_run(run, JobOutcome.retry(at.astimezone(timezone(timedelta(hours=-7)))))
    assert queue.get_job(run.id).scheduled_at == at
