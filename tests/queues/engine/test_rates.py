"""Per-queue rates (`queue_config(name, rate=(N, seconds))`), on the database of this run and
in memory, on a moved clock: a window gives out at most N claims, the next window refills
the bucket (unused tokens are not saved up), windows are aligned to the clock, a rate works
with a limit of running jobs, and bad values are refused and change nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from queues.api import DequeueOptions, InvalidQueueConfig, Job, JobOutcome, JobQueue, TestQueue
from queues.clock import MockClock
from tests.queues.conftest import unique_queue
from tests.queues.engine.test_concurrency import in_threads

BATCH = DequeueOptions.batch(10)
#: A whole minute: the start of a window of 60 s (and of 0.5 s, 10 s ...).
MINUTE = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)


def _rated(queue, jobs: int, seconds: float, count: int = 20) -> str:
    queue.clock.set(MINUTE)
    name = unique_queue("rated")
    queue.enqueue_many([Job(queue_name=name, payload={"n": i}) for i in range(count)])
    queue.queue_config(name, rate=(jobs, seconds))
    return name


def _claims(queue, name: str, options=BATCH) -> int:
    return len(queue.dequeue(name, options))


def test_a_window_gives_out_at_most_its_jobs(queue):
    name = _rated(queue, 4, 60)
    assert _claims(queue, name, DequeueOptions.batch(3)) == 3
    assert _claims(queue, name) == 1
    assert _claims(queue, name) == 0
    assert queue.at_rate(name) == MINUTE + timedelta(seconds=60)
    assert queue.at_limit(name) is None
    queue.clock.advance(timedelta(seconds=59.999))
    assert _claims(queue, name) == 0, "still the same window"


def test_the_next_window_refills_without_saving_up(queue):
    name = _rated(queue, 4, 60)
    assert _claims(queue, name, DequeueOptions.batch(1)) == 1
    queue.clock.advance(timedelta(seconds=60))
    assert _claims(queue, name) == 4, "a full bucket, not 3 left over plus 4"
    assert queue.at_rate(name) == MINUTE + timedelta(seconds=120)
    queue.clock.advance(timedelta(minutes=10))
    assert _claims(queue, name) == 4 and _claims(queue, name) == 0


def test_windows_are_aligned_to_the_clock(queue):
    name = _rated(queue, 2, 10)
    queue.clock.set(MINUTE + timedelta(seconds=9.9))
    assert _claims(queue, name) == 2
    queue.clock.set(MINUTE + timedelta(seconds=10))
    assert _claims(queue, name) == 2, "a new window at each tenth second"
    queue.clock.set(MINUTE + timedelta(seconds=19.5))
    assert _claims(queue, name) == 0


def test_a_clock_behind_the_rows_window_spends_from_it(queue):
    name = _rated(queue, 3, 60)
    queue.clock.set(MINUTE + timedelta(seconds=61))
    assert _claims(queue, name, DequeueOptions.batch(2)) == 2
    queue.clock.set(MINUTE + timedelta(seconds=59))  # a host whose clock lags
    assert _claims(queue, name) == 1 and _claims(queue, name) == 0


def test_a_rate_and_a_limit_take_the_smaller_room(queue):
    name = _rated(queue, 5, 60)
    queue.queue_config(name, max_running=2)
    config = queue.queue_config(name)
    assert (config.max_running, config.rate) == (2, (5, 60.0)), "setting one keeps the other"
    first = queue.dequeue(name, BATCH)
    assert len(first) == 2 and queue.at_limit(name) == 2 and queue.at_rate(name) is None
    _complete(queue, first)
    second = queue.dequeue(name, BATCH)
    assert len(second) == 2 and queue.at_limit(name) == 2
    _complete(queue, second)
    assert _claims(queue, name) == 1, "the fifth token of the window"
    assert queue.at_rate(name) is not None and queue.at_limit(name) is None


def _complete(queue, jobs) -> None:
    for job in jobs:
        queue.finish_job_run(job, JobOutcome.completed())


def test_a_changed_rate_starts_a_full_bucket_and_none_removes_it(queue):
    name = _rated(queue, 2, 60)
    assert _claims(queue, name) == 2
    queue.queue_config(name, rate=(3, 60))
    assert _claims(queue, name) == 3
    queue.queue_config(name, rate=None, updated_by="ops")
    config = queue.queue_config(name)
    assert (config.rate, config.updated_by) == (None, "ops")
    assert _claims(queue, name) == 10 and queue.at_rate(name) is None


def test_the_rate_is_per_queue(queue):
    rated = _rated(queue, 1, 60)
    other = unique_queue("unrated")
    queue.enqueue_many([Job(queue_name=other) for _ in range(4)])
    assert _claims(queue, rated) == 1 and _claims(queue, rated) == 0
    assert _claims(queue, other) == 4


@pytest.mark.parametrize(
    "bad",
    [
        (0, 60),
        (-1, 60),
        (1.5, 60),
        ("3", 60),
        (True, 60),
        (10**7, 60),
        (3, 0),
        (3, -1),
        (3, float("nan")),
        (3, float("inf")),
        (3, 10**9),
        (3, "60"),
        (3,),
        3,
        "3/60",
        (3, 60, 1),
    ],
)
def test_a_bad_rate_is_refused_and_changes_nothing(queue, bad):
    name = _rated(queue, 2, 60)
    with pytest.raises(InvalidQueueConfig, match="rate"):
        queue.queue_config(name, max_running=5, rate=bad)
    config = queue.queue_config(name)
    assert (config.max_running, config.rate) == (None, (2, 60.0))
    assert _claims(queue, name) == 2 and _claims(queue, name) == 0


def test_a_bad_rate_on_an_unconfigured_queue_writes_no_row(queue):
    name = unique_queue("rate_bad")
    with pytest.raises(InvalidQueueConfig):
        queue.queue_config(name, rate=(5, 0))
    assert queue.store.get_queue_config(name) is None


@pytest.fixture(params=["db", "memory"])
def make_queue(request, transactional_db):
    """A queue per thread on the database (each its own connection) or one TestQueue, all
    on one clock."""
    clock = MockClock(MINUTE)
    if request.param == "db":
        yield lambda: JobQueue(clock=clock)
    else:
        shared = TestQueue(clock=clock)
        yield lambda: shared


def test_threads_claiming_at_once_share_one_bucket(make_queue):
    queue = make_queue()
    name = unique_queue("race_rate")
    queue.enqueue_many([Job(queue_name=name, payload={"n": i}) for i in range(60)])
    queue.queue_config(name, rate=(5, 60))
    got: list[int] = []

    def claim() -> None:
        got.append(len(make_queue().dequeue(name, DequeueOptions.batch(4))))

    for window in range(3):
        got.clear()
        in_threads([claim] * 8)
        assert sum(got) == 5, (window, got)
        queue.clock.advance(timedelta(seconds=60))
