"""Hammerwork 3.0's batch-claim scenarios (seed file), every assertion kept, on the database
of this run and on TestQueue."""

from __future__ import annotations

import threading
from datetime import timedelta

from django.db import connection

from queues.api import (
    CronSchedule,
    DequeueOptions,
    Job,
    JobGroup,
    JobOutcome,
    JobPriority,
    JobStatus,
    PriorityWeights,
)
from tests.queues.conftest import aged_job, unique_queue

SPECS = [
    (JobPriority.NORMAL, 50),
    (JobPriority.CRITICAL, 10),
    (JobPriority.LOW, 90),
    (JobPriority.NORMAL, 70),
    (JobPriority.HIGH, 20),
    (JobPriority.CRITICAL, 30),
]


def test_batch_claims_in_priority_order(queue):
    queue_name = unique_queue("batch_order")
    ids = {}
    for priority, age in SPECS:
        ids[queue.enqueue(aged_job(queue_name, priority, age))] = (priority, age)

    assert queue.dequeue(queue_name, DequeueOptions.batch(0)) == []

    first = queue.dequeue(queue_name, DequeueOptions.batch(4))
    assert [ids[job.id] for job in first] == [
        (JobPriority.CRITICAL, 30),
        (JobPriority.CRITICAL, 10),
        (JobPriority.HIGH, 20),
        (JobPriority.NORMAL, 70),
    ]
    for job in first:
        assert job.status == JobStatus.RUNNING
        assert job.attempts == 1
        assert job.started_at is not None
        stored = queue.get_job(job.id)
        assert stored.status == JobStatus.RUNNING
        assert stored.attempts == 1

    # The rest, then nothing.
    rest = queue.dequeue(queue_name, DequeueOptions.batch(10))
    assert [ids[job.id] for job in rest] == [(JobPriority.NORMAL, 50), (JobPriority.LOW, 90)]
    assert queue.dequeue(queue_name, DequeueOptions.batch(10)) == []

    # Strict weights claim in the same strict order.
    strict_queue = unique_queue("batch_strict")
    for priority, age in SPECS:
        queue.enqueue(aged_job(strict_queue, priority, age))
    strict = queue.dequeue(
        strict_queue,
        DequeueOptions.batch(3)
        .with_lease_duration(timedelta(seconds=60))
        .with_priority_weights(PriorityWeights.strict()),
    )
    assert [job.priority for job in strict] == [
        JobPriority.CRITICAL,
        JobPriority.CRITICAL,
        JobPriority.HIGH,
    ]


def test_weighted_batch_fills_from_picked_level(queue):
    queue_name = unique_queue("batch_weighted")
    for age in range(5):
        queue.enqueue(aged_job(queue_name, JobPriority.HIGH, 100 - age))
        queue.enqueue(aged_job(queue_name, JobPriority.LOW, 200 - age))
    weights = PriorityWeights()
    lease = timedelta(seconds=60)

    first = queue.dequeue(
        queue_name,
        DequeueOptions.batch(3).with_lease_duration(lease).with_priority_weights(weights),
    )
    assert len(first) == 3
    level = first[0].priority
    assert all(job.priority == level for job in first), (
        "a batch smaller than the picked level comes from that level only"
    )
    # Oldest first within the level.
    assert all(a.scheduled_at <= b.scheduled_at for a, b in zip(first, first[1:]))

    # Seven are left (2 of the picked level, 5 of the other): a batch of 7 takes all.
    rest = queue.dequeue(
        queue_name,
        DequeueOptions.batch(10).with_lease_duration(lease).with_priority_weights(weights),
    )
    assert len(rest) == 7
    assert len({job.id for job in first + rest}) == 10


def test_batch_honours_pause_dependencies_and_recurring(queue):
    queue_name = unique_queue("batch_holds")

    # A workflow: `child` waits for `parent`.
    parent = Job(queue_name=queue_name, payload={"step": "parent"})
    child = Job(queue_name=queue_name, payload={"step": "child"}, depends_on=[parent.id])
    parent_id, child_id = parent.id, child.id
    queue.enqueue_workflow(JobGroup("batch").add_job(parent).then(child))

    # A disabled recurring job's pending occurrence.
    cron_job = Job(queue_name=queue_name, payload={}, cron_schedule="0 0 * * * *")
    CronSchedule(cron_job.cron_schedule)  # the seed builds it through CronSchedule::new
    cron_job.scheduled_at = cron_job.created_at - timedelta(hours=1)
    cron_job.next_run_at = cron_job.scheduled_at
    held_cron = queue.enqueue(cron_job)
    queue.disable_recurring_job(held_cron)

    plain = queue.enqueue(Job(queue_name=queue_name, payload={}))

    # Paused: nothing is claimed.
    queue.pause_queue(queue_name, "test")
    assert queue.dequeue(queue_name, DequeueOptions.batch(10)) == []
    queue.resume_queue(queue_name, "test")

    claimed = queue.dequeue(queue_name, DequeueOptions.batch(10))
    assert {job.id for job in claimed} == {parent_id, plain}

    # Completing the parent releases the child.
    parent_run = next(job for job in claimed if job.id == parent_id)
    recorded = queue.finish_job_run(parent_run, JobOutcome.completed())
    assert recorded is not None, "the parent run is recorded"
    assert recorded.unblocked == [child_id]
    nxt = queue.dequeue(queue_name, DequeueOptions.batch(10))
    assert [job.id for job in nxt] == [child_id]
    assert queue.get_job(held_cron).status == JobStatus.PENDING, "a disabled recurring job ran"


def test_batch_claims_hold_leases(queue):
    queue_name = unique_queue("batch_leases")
    for _ in range(3):
        queue.enqueue(Job(queue_name=queue_name, payload={}))
    claimed = queue.dequeue(
        queue_name, DequeueOptions.batch(3).with_lease_duration(timedelta(seconds=600))
    )
    assert len(claimed) == 3

    recovery = queue.requeue_stale_jobs(None)
    for job in claimed:
        assert job.id not in recovery.requeued and job.id not in recovery.dead, (
            "a job claimed in a batch had no lease"
        )
        assert queue.heartbeat_job(job, timedelta(seconds=600))


def test_release_returns_unstarted_job(queue):
    queue_name = unique_queue("batch_release")
    for age in (20, 10):
        queue.enqueue(aged_job(queue_name, JobPriority.NORMAL, age))
    claimed = queue.dequeue(queue_name, DequeueOptions.batch(2))
    assert len(claimed) == 2
    released = claimed[0]

    assert queue.release_job_run(released)
    stored = queue.get_job(released.id)
    assert stored.status == JobStatus.PENDING
    assert stored.attempts == 0, "the claim's attempt is taken back"
    assert stored.started_at is None
    # Not Running this run any more: nothing to release, and no heartbeat.
    assert not queue.release_job_run(released)
    assert not queue.heartbeat_job(released, timedelta(seconds=60))

    # It keeps its place and is claimed again.
    queue.clock.advance(timedelta(milliseconds=5))
    again = queue.dequeue(queue_name, DequeueOptions.batch(5))
    assert [job.id for job in again] == [released.id]
    assert again[0].attempts == 1
    # A stale run (the first claim) cannot release the new one. Runs are told apart by a
    # token per claim, so this holds even when the clock has not moved.
    assert not queue.release_job_run(released)
    assert queue.get_job(released.id).status == JobStatus.RUNNING


def test_concurrent_batch_claims_never_double_claim(queue):
    jobs_total = 300
    queue_name = unique_queue("batch_concurrent")
    priorities = list(JobPriority)
    jobs = [
        Job(queue_name=queue_name, payload={"i": i}, priority=priorities[i % len(priorities)])
        for i in range(jobs_total)
    ]
    expected = {job.id for job in jobs}
    for job in jobs:
        queue.enqueue(job)

    lease = timedelta(seconds=600)
    results: list[list] = [[] for _ in range(8)]
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def claimer(task: int) -> None:
        try:
            start.wait()
            weights = PriorityWeights()
            empty_polls = 0
            while empty_polls < 3:
                if task % 4 == 0:
                    batch = queue.dequeue(queue_name, DequeueOptions(lease_duration=lease))[:1]
                elif task % 4 == 1:
                    batch = queue.dequeue(
                        queue_name,
                        DequeueOptions.batch(5 + task)
                        .with_lease_duration(lease)
                        .with_priority_weights(weights),
                    )
                else:
                    batch = queue.dequeue(
                        queue_name, DequeueOptions.batch(7).with_lease_duration(lease)
                    )
                if batch:
                    empty_polls = 0
                    results[task].extend(job.id for job in batch)
                else:
                    empty_polls += 1
                    threading.Event().wait(0.005)
        except BaseException as exc:  # reported below, in the test thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=claimer, args=(task,)) for task in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors

    seen = set()
    total = 0
    for claimed in results:
        for job_id in claimed:
            total += 1
            assert job_id not in seen, f"job {job_id} was claimed twice"
            seen.add(job_id)
    assert total == jobs_total
    assert seen == expected
    for job_id in list(expected)[:20]:
        assert queue.get_job(job_id).attempts == 1
