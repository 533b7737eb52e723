"""Per-queue limits (`queue_config(name, max_running=N)`), on the database of this run and in
memory: a claim takes at most the room the limit leaves, every way a job stops Running makes
room, a changed limit applies at the next claim, and bad values are refused."""

from __future__ import annotations

from datetime import timedelta

import pytest

from queues.api import (
    DequeueOptions,
    InvalidQueueConfig,
    InvalidQueueName,
    Job,
    JobOutcome,
    JobPriority,
    JobStatus,
    PriorityWeights,
    QueueError,
)
from tests.queues.conftest import unique_queue

BATCH = DequeueOptions.batch(10)


def _limited(queue, limit: int, jobs: int = 10) -> str:
    name = unique_queue("limited")
    queue.enqueue_many([Job(queue_name=name, payload={"n": i}) for i in range(jobs)])
    queue.queue_config(name, max_running=limit)
    return name


def _running(queue, name: str) -> int:
    return queue.get_job_counts_by_status(name)[JobStatus.RUNNING]


def test_a_claim_takes_only_the_room_the_limit_leaves(queue):
    name = _limited(queue, 3)
    first = queue.dequeue(name, BATCH)
    assert len(first) == 3 and queue.at_limit(name) == 3
    assert queue.dequeue(name, BATCH) == [] and queue.at_limit(name) == 3
    assert _running(queue, name) == 3
    queue.finish_job_run(first[0], JobOutcome.completed())
    again = queue.dequeue(name, BATCH)
    assert len(again) == 1 and _running(queue, name) == 3


def test_a_claim_smaller_than_the_room_is_not_at_the_limit(queue):
    name = _limited(queue, 5)
    assert len(queue.dequeue(name, DequeueOptions.batch(2))) == 2
    assert queue.at_limit(name) is None
    assert len(queue.dequeue(name, BATCH)) == 3 and queue.at_limit(name) == 5


def test_a_queue_with_fewer_jobs_than_the_room_is_not_at_the_limit(queue):
    name = _limited(queue, 5, jobs=2)
    assert len(queue.dequeue(name, BATCH)) == 2
    assert queue.at_limit(name) is None


def test_every_way_out_of_running_makes_room(queue):
    name = _limited(queue, 2)
    a, b = queue.dequeue(name, BATCH)
    assert queue.release_job_run(a)
    (c,) = queue.dequeue(name, BATCH)
    queue.finish_job_run(b, JobOutcome.failed("boom"))  # retried later: Pending, not Running
    (d,) = queue.dequeue(name, BATCH)
    queue.cancel_job(c.id)
    assert len(queue.dequeue(name, BATCH)) == 1
    assert d.id != b.id
    assert _running(queue, name) == 2 and queue.dequeue(name, BATCH) == []


def test_a_job_whose_lease_expired_counts_until_the_reaper_takes_it(queue):
    name = _limited(queue, 1)
    options = DequeueOptions(lease_duration=timedelta(seconds=5)).with_batch_size(10)
    (stale,) = queue.dequeue(name, options)
    queue.clock.advance(timedelta(seconds=10))
    assert queue.dequeue(name, options) == [], "a Running job holds its place, lease or not"
    assert queue.requeue_stale_jobs(name).requeued == [stale.id]
    assert len(queue.dequeue(name, options)) == 1


def test_a_raised_limit_applies_at_the_next_claim(queue):
    name = _limited(queue, 2)
    assert len(queue.dequeue(name, BATCH)) == 2
    queue.queue_config(name, max_running=5)
    assert len(queue.dequeue(name, BATCH)) == 3


def test_a_lowered_limit_claims_nothing_until_running_jobs_end_below_it(queue):
    name = _limited(queue, 4)
    held = queue.dequeue(name, BATCH)
    queue.queue_config(name, max_running=2)
    assert queue.dequeue(name, BATCH) == [], "four running, limit two"
    for job in held[:2]:
        queue.finish_job_run(job, JobOutcome.completed())
    assert queue.dequeue(name, BATCH) == [], "two running, limit two"
    queue.finish_job_run(held[2], JobOutcome.completed())
    assert len(queue.dequeue(name, BATCH)) == 1


def test_a_removed_limit_lets_every_job_be_claimed(queue):
    name = _limited(queue, 1)
    assert len(queue.dequeue(name, BATCH)) == 1
    config = queue.queue_config(name, max_running=None, updated_by="ops")
    assert config.max_running is None and config.updated_by == "ops"
    assert len(queue.dequeue(name, BATCH)) == 9 and queue.at_limit(name) is None


def test_a_limit_set_on_a_queue_with_running_jobs_counts_them(queue):
    name = unique_queue("limited_late")
    queue.enqueue_many([Job(queue_name=name) for _ in range(6)])
    assert len(queue.dequeue(name, DequeueOptions.batch(3))) == 3
    queue.queue_config(name, max_running=3)
    assert queue.dequeue(name, BATCH) == []


def test_weighted_claims_keep_the_limit(queue):
    name = unique_queue("limited_weighted")
    levels = [JobPriority.LOW, JobPriority.NORMAL, JobPriority.HIGH, JobPriority.CRITICAL]
    queue.enqueue_many([Job(queue_name=name, priority=p) for p in levels for _ in range(3)])
    queue.queue_config(name, max_running=5)
    weights = PriorityWeights().with_weight(JobPriority.LOW, 1).with_weight(JobPriority.HIGH, 5)
    options = BATCH.with_priority_weights(weights)
    assert len(queue.dequeue(name, options)) == 5
    assert queue.dequeue(name, options) == [] and _running(queue, name) == 5


def test_a_paused_limited_queue_gives_nothing_and_is_not_at_its_limit(queue):
    name = _limited(queue, 3)
    queue.pause_queue(name)
    assert queue.dequeue(name, BATCH) == [] and queue.at_limit(name) is None
    queue.resume_queue(name)
    assert len(queue.dequeue(name, BATCH)) == 3


def test_the_limit_is_per_queue(queue):
    limited = _limited(queue, 1)
    other = unique_queue("unlimited")
    queue.enqueue_many([Job(queue_name=other) for _ in range(4)])
    assert len(queue.dequeue(limited, BATCH)) == 1
    assert len(queue.dequeue(other, BATCH)) == 4 and queue.at_limit(other) is None


def test_the_configuration_reads_back(queue):
    name = unique_queue("config_read")
    blank = queue.queue_config(name)
    assert (blank.queue_name, blank.max_running) == (name, None)
    queue.queue_config(name, max_running=7, updated_by="alice")
    read = queue.queue_config(name)
    assert (read.max_running, read.updated_by, read.updated_at) == (7, "alice", queue.now())


@pytest.mark.parametrize("bad", [0, -1, 1.5, "3", True, 10**7, [3]])
def test_a_bad_limit_is_refused_and_changes_nothing(queue, bad):
    name = _limited(queue, 2)
    with pytest.raises(InvalidQueueConfig, match="max_running must be a whole number"):
        queue.queue_config(name, max_running=bad)
    assert queue.queue_config(name).max_running == 2
    assert len(queue.dequeue(name, BATCH)) == 2 and queue.dequeue(name, BATCH) == []


def test_a_bad_limit_on_an_unconfigured_queue_writes_no_row(queue):
    name = unique_queue("config_bad")
    with pytest.raises(InvalidQueueConfig) as raised:
        queue.queue_config(name, max_running=0)
    assert isinstance(raised.value, QueueError) and isinstance(raised.value, ValueError)
    assert queue.queue_config(name).updated_by is None
    assert queue.store.get_queue_config(name) is None


@pytest.mark.parametrize("bad", ["", " q", None, "x" * 256])
def test_a_bad_queue_name_is_refused(queue, bad):
    with pytest.raises(InvalidQueueName):
        queue.queue_config(bad, max_running=3)
