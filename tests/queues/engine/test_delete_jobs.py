"""`JobQueue.delete_jobs` (and `TestQueue`'s): many jobs deleted in one transaction as
`delete_job` deletes one: Running ones refused, the caller's condition asked again of the
locked rows, dependents released, the tallies of their batches taken down."""

from __future__ import annotations

from uuid import uuid4

import pytest

from queues.api import Job, JobBatch, JobOutcome, JobStatus
from queues.enums import DependencyStatus
from queues.exceptions import InvalidJob
from queues.options import DequeueOptions
from tests.queues.conftest import unique_queue


def _finished(queue, name: str, count: int, outcome) -> list:
    queue.enqueue_many([Job(queue_name=name) for _ in range(count)])
    runs = queue.dequeue(name, DequeueOptions(batch_size=count))
    queue.finish_job_runs([(run, outcome) for run in runs])
    return [run.id for run in runs]


def test_deletes_the_deletable_refuses_running_and_counts_the_missing(queue):
    name = unique_queue("del_many")
    done = _finished(queue, name, 3, JobOutcome.completed())
    failed = _finished(queue, name, 2, JobOutcome.dead("no"))
    queue.enqueue(Job(queue_name=name))
    running = queue.dequeue_one(name)
    missing = uuid4()

    result = queue.delete_jobs([*done, *failed, running.id, str(missing)])

    assert sorted(result.deleted, key=str) == sorted([*done, *failed], key=str)
    assert result.refused == [running.id]
    assert result.missing == 1
    assert all(queue.get_job(job_id) is None for job_id in [*done, *failed])
    assert queue.get_job(running.id).status == JobStatus.RUNNING
    assert queue.get_job_attempts(failed[0]) == []


def test_the_condition_is_asked_of_each_locked_job(queue):
    name = unique_queue("del_where")
    ids = _finished(queue, name, 4, JobOutcome.completed())
    keep = set(ids[:2])
    result = queue.delete_jobs(ids, where=lambda job: job.id not in keep)
    assert sorted(result.kept, key=str) == sorted(keep, key=str)
    assert {job_id for job_id in ids if queue.get_job(job_id)} == keep


def test_a_dependent_that_waited_only_for_deleted_jobs_is_released(queue):
    name = unique_queue("del_deps")
    a, b = Job(queue_name=name), Job(queue_name=name)
    child = Job(queue_name=name).depends_on_job(a).depends_on_job(b)
    queue.enqueue_many([a, b, child])
    assert queue.get_job(child.id).dependency_status == DependencyStatus.WAITING

    queue.delete_jobs([a.id])
    assert queue.get_job(child.id).dependency_status == DependencyStatus.WAITING
    queue.delete_jobs([b.id])
    assert queue.get_job(child.id).dependency_status == DependencyStatus.SATISFIED


def test_the_batch_tallies_lose_the_deleted_jobs(queue):
    name = unique_queue("del_batch")
    jobs = [Job(queue_name=name) for _ in range(3)]
    batch_id = queue.enqueue_batch(JobBatch("b", jobs=jobs))
    runs = queue.dequeue(name, DequeueOptions(batch_size=3))
    queue.finish_job_run(runs[0], JobOutcome.completed())
    queue.finish_job_run(runs[1], JobOutcome.failed("x"))

    result = queue.delete_jobs([runs[0].id, runs[1].id, runs[2].id])

    assert result.refused == [runs[2].id]  # still Running
    status = queue.get_batch_status(batch_id)
    assert (status.total_jobs, status.completed_jobs, status.failed_jobs) == (1, 0, 0)


def test_no_ids_is_nothing_and_a_bad_id_is_refused_before_anything(queue):
    name = unique_queue("del_bad")
    ids = _finished(queue, name, 1, JobOutcome.completed())
    assert queue.delete_jobs([]).deleted == []
    with pytest.raises(InvalidJob, match="not a job id"):
        queue.delete_jobs([*ids, "not-an-id"])
    assert queue.get_job(ids[0]) is not None
