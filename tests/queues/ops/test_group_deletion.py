"""Deleting a batch or a workflow (`queues.engine.deletion`) through the queue's store, on the
database and in memory alike: its jobs as `delete_jobs` deletes them, then its row; refused,
with nothing changed, while a job of it is Running."""

from __future__ import annotations

import pytest

from queues.api import DependencyStatus, Job, JobBatch, JobGroup, JobOutcome
from queues.engine import deletion
from queues.exceptions import InvalidJobTransition, JobNotFound
from queues.models import Batch, Workflow
from tests.queues.conftest import unique_queue


def test_a_batch_is_deleted_with_its_jobs_unless_one_is_running(queue):
    name = unique_queue("group_del")
    jobs = [Job(queue_name=name) for _ in range(3)]
    batch_id = queue.enqueue_batch(JobBatch("b", jobs=jobs))
    run = queue.dequeue_one(name)
    batch = queue.store.get_group(Batch, batch_id)

    reason = deletion.refusal(batch, queue.store)
    assert reason == f"batch 'b': job {run.id} is Running; cancel it first"
    with pytest.raises(InvalidJobTransition, match="cannot be deleted"):
        deletion.delete_group(queue, batch)
    assert len(queue.get_batch_jobs(batch_id)) == 3

    queue.finish_job_run(run, JobOutcome.failed("boom"))  # retried later: Pending
    assert deletion.refusal(batch, queue.store) is None and queue.get_job_attempts(run.id)
    deletion.delete_group(queue, batch)
    assert queue.store.get_group(Batch, batch_id) is None
    assert queue.get_batch_jobs(batch_id) == []
    assert queue.get_job_attempts(run.id) == []
    with pytest.raises(JobNotFound):
        deletion.delete_group(queue, batch)


def test_a_workflow_is_deleted_with_its_jobs_and_releases_those_outside(queue):
    name = unique_queue("group_del")
    first, second = Job(queue_name=name), Job(queue_name=name)
    workflow_id = queue.enqueue_workflow(JobGroup("w").add_job(first).then(second))
    outside = Job(queue_name=name).depends_on_job(second)
    queue.enqueue(outside)
    assert queue.get_job(outside.id).dependency_status == DependencyStatus.WAITING

    deletion.delete_group(queue, queue.store.get_group(Workflow, workflow_id))
    assert queue.store.get_group(Workflow, workflow_id) is None
    assert queue.get_job(first.id) is None and queue.get_job(second.id) is None
    assert queue.get_job(outside.id).dependency_status == DependencyStatus.SATISFIED
