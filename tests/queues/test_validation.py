"""Bad input gets a clear, typed error and changes nothing."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from queues.api import (
    DequeueOptions,
    InvalidCronSchedule,
    InvalidJob,
    InvalidJobTransition,
    InvalidPayload,
    InvalidPriority,
    InvalidQueueName,
    Job,
    JobNotFound,
    JobOutcome,
    QueueError,
)
from tests.queues.conftest import unique_queue


def bad_jobs(name):
    yield "empty queue name", InvalidQueueName, Job(queue_name="", payload={})
    yield "blank queue name", InvalidQueueName, Job(queue_name="   ", payload={})
    yield "over-long queue name", InvalidQueueName, Job(queue_name="q" * 256, payload={})
    yield "set payload", InvalidPayload, Job(queue_name=name, payload={"s": {1, 2}})
    yield "object payload", InvalidPayload, Job(queue_name=name, payload=object())
    yield "NaN payload", InvalidPayload, Job(queue_name=name, payload={"x": float("nan")})
    yield "priority 7", InvalidPriority, Job(queue_name=name, payload={}, priority=7)
    yield "priority -1", InvalidPriority, Job(queue_name=name, payload={}, priority=-1)
    yield "priority text", InvalidPriority, Job(queue_name=name, payload={}, priority="high")
    yield "max_attempts 0", InvalidJob, Job(queue_name=name, payload={}, max_attempts=0)
    yield "max_attempts text", InvalidJob, Job(queue_name=name, payload={}, max_attempts="3")
    yield "bad cron", InvalidCronSchedule, Job(queue_name=name, payload={}, cron_schedule="nope")
    yield (
        "bad zone",
        InvalidCronSchedule,
        Job(queue_name=name, payload={}, cron_schedule="* * * * *", timezone="Nowhere/Land"),
    )
    yield (
        "naive scheduled_at",
        InvalidJob,
        Job(queue_name=name, payload={}, scheduled_at=datetime(2030, 1, 1)),
    )
    yield "zero timeout", InvalidJob, Job(queue_name=name, payload={}, timeout=timedelta(0))


def test_each_bad_job_is_refused_with_a_typed_error(queue):
    name = unique_queue("invalid")
    for label, error, job in bad_jobs(name):
        with pytest.raises(error) as info:
            queue.enqueue(job)
        assert isinstance(info.value, QueueError), label
        assert isinstance(info.value, ValueError), label
    assert sum(queue.get_job_counts_by_status(name).values()) == 0


def test_one_bad_job_in_a_group_writes_nothing(queue):
    name = unique_queue("invalid_many")
    good = [Job(queue_name=name, payload={"i": i}) for i in range(3)]
    with pytest.raises(InvalidPriority):
        queue.enqueue_many([*good, Job(queue_name=name, payload={}, priority=9)])
    assert sum(queue.get_job_counts_by_status(name).values()) == 0


def test_bad_claim_arguments(queue):
    with pytest.raises(InvalidQueueName):
        queue.dequeue("")
    with pytest.raises(ValueError):
        DequeueOptions.batch(-1)
    with pytest.raises(ValueError):
        DequeueOptions.batch(1).with_lease_duration(timedelta(0))
    with pytest.raises(ValueError):
        DequeueOptions.batch(True)


def test_unknown_ids_and_refused_transitions(queue):
    name = unique_queue("transitions")
    with pytest.raises(InvalidJob):
        queue.get_job("not-a-uuid")
    assert queue.get_job("00000000-0000-0000-0000-000000000000") is None
    with pytest.raises(JobNotFound):
        queue.retry_job("00000000-0000-0000-0000-000000000000")
    job_id = queue.enqueue(Job(queue_name=name, payload={}))
    with pytest.raises(InvalidJobTransition):
        queue.enable_recurring_job(job_id)
    run = queue.dequeue_one(name)
    with pytest.raises(InvalidJobTransition):
        queue.delete_job(job_id)  # Running: cancel it first
    queue.finish_job_run(run, JobOutcome.completed())
    with pytest.raises(InvalidJobTransition):
        queue.retry_job(job_id)
    assert queue.get_job(job_id).status == "Completed"


def test_an_id_that_exists_already_is_a_typed_error(queue):
    from queues.api import InvalidWorkflow, JobBatch, JobGroup

    name = unique_queue("duplicate")
    job = Job(queue_name=name, payload={})
    queue.enqueue(job)
    again = Job(queue_name=name, payload={"second": True})
    again.id = job.id
    with pytest.raises(InvalidJob, match="already exists"):
        queue.enqueue(again)
    batch = JobBatch("b", jobs=[Job(queue_name=name, payload={})])
    queue.enqueue_batch(batch)
    with pytest.raises(InvalidJob, match="already exists"):
        queue.enqueue_batch(JobBatch("b", jobs=[again]))
    group = JobGroup("g").add_job(Job(queue_name=name, payload={}))
    group.id = batch.id
    queue.enqueue_workflow(group)
    clash = JobGroup("g2").add_job(Job(queue_name=name, payload={}))
    clash.id = group.id
    with pytest.raises(InvalidWorkflow, match="already exists"):
        queue.enqueue_workflow(clash)
    assert sum(queue.get_job_counts_by_status(name).values()) == 3


def test_an_empty_cron_schedule_is_no_schedule(queue):
    name = unique_queue("empty_cron")
    job_id = queue.enqueue(Job(queue_name=name, payload={}, cron_schedule=""))
    assert queue.get_job(job_id).cron_schedule is None
    assert [job.id for job in queue.dequeue(name)] == [job_id]


def test_a_naive_retry_time_is_refused(queue):
    name = unique_queue("naive_retry")
    queue.enqueue(Job(queue_name=name, payload={}))
    run = queue.dequeue_one(name)
    with pytest.raises(InvalidJob):
        queue.finish_job_run(run, JobOutcome.retry(datetime(2030, 1, 1)))
    assert queue.get_job(run.id).status == "Running"
