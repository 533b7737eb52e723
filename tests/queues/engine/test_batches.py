"""Batches: tallies, statuses and the three partial-failure modes."""

from __future__ import annotations

import pytest

from queues.api import (
    BatchStatus,
    DequeueOptions,
    InvalidBatch,
    Job,
    JobBatch,
    JobOutcome,
    JobStatus,
    PartialFailureMode,
)
from tests.queues.conftest import unique_queue


def make_batch(name, n, mode):
    jobs = [Job(queue_name=name, payload={"i": i}, max_attempts=1) for i in range(n)]
    return JobBatch("b", jobs=jobs, partial_failure_mode=mode)


def test_continue_on_error_ends_partially_failed(queue):
    name = unique_queue("batch_continue")
    batch_id = queue.enqueue_batch(make_batch(name, 4, PartialFailureMode.CONTINUE_ON_ERROR))
    assert queue.get_batch_status(batch_id).status == BatchStatus.PENDING
    runs = queue.dequeue(name, DequeueOptions.batch(10))
    queue.finish_job_run(runs[0], JobOutcome.failed("bad"))
    status = queue.get_batch_status(batch_id)
    assert (status.status, status.failed_jobs, status.pending_jobs) == ("Processing", 1, 3)
    for run in runs[1:]:
        queue.finish_job_run(run, JobOutcome.completed())
    status = queue.get_batch_status(batch_id)
    assert status.status == BatchStatus.PARTIALLY_FAILED
    assert (status.total_jobs, status.completed_jobs, status.failed_jobs) == (4, 3, 1)
    assert status.pending_jobs == 0 and status.completed_at is not None


def test_all_completed_is_completed(queue):
    name = unique_queue("batch_ok")
    batch_id = queue.enqueue_batch(make_batch(name, 3, PartialFailureMode.FAIL_FAST))
    for run in queue.dequeue(name, DequeueOptions.batch(10)):
        queue.finish_job_run(run, JobOutcome.completed())
    assert queue.get_batch_status(batch_id).status == BatchStatus.COMPLETED
    assert len(queue.get_batch_jobs(batch_id)) == 3


def test_fail_fast_fails_unstarted_jobs(queue):
    name = unique_queue("batch_fast")
    batch_id = queue.enqueue_batch(make_batch(name, 5, PartialFailureMode.FAIL_FAST))
    first, second = queue.dequeue(name, DequeueOptions.batch(2))
    recorded = queue.finish_job_run(first, JobOutcome.failed("boom"))
    assert recorded.status == JobStatus.DEAD
    assert len(recorded.cancelled) == 3
    for job in queue.get_batch_jobs(batch_id):
        if job.id in recorded.cancelled:
            assert job.status == JobStatus.FAILED
            assert job.error_message.startswith("Batch failed")
    status = queue.get_batch_status(batch_id)
    assert status.status == BatchStatus.FAILED and status.failed_jobs == 4
    # The held job of a failed batch is failed, not started.
    assert queue.start_claimed_run(second) == "cancelled"
    assert queue.get_job(second.id).status == JobStatus.FAILED
    assert queue.get_batch_status(batch_id).failed_jobs == 5


def test_collect_errors_keeps_every_error(queue):
    name = unique_queue("batch_collect")
    batch_id = queue.enqueue_batch(make_batch(name, 3, PartialFailureMode.COLLECT_ERRORS))
    runs = queue.dequeue(name, DequeueOptions.batch(10))
    for i, run in enumerate(runs):
        queue.finish_job_run(run, JobOutcome.failed(f"error {i}"))
    status = queue.get_batch_status(batch_id)
    assert status.status == BatchStatus.FAILED
    assert sorted(status.job_errors.values()) == ["error 0", "error 1", "error 2"]


def test_operator_retry_takes_a_failure_back_out_of_the_tally(queue):
    name = unique_queue("batch_retry")
    batch_id = queue.enqueue_batch(make_batch(name, 2, PartialFailureMode.CONTINUE_ON_ERROR))
    bad, good = queue.dequeue(name, DequeueOptions.batch(2))
    queue.finish_job_run(bad, JobOutcome.failed("x"))
    queue.finish_job_run(good, JobOutcome.completed())
    assert queue.get_batch_status(batch_id).status == BatchStatus.PARTIALLY_FAILED
    queue.retry_job(bad.id)
    status = queue.get_batch_status(batch_id)
    assert (status.status, status.failed_jobs, status.pending_jobs) == ("Processing", 0, 1)
    queue.finish_job_run(queue.dequeue_one(name), JobOutcome.completed())
    assert queue.get_batch_status(batch_id).status == BatchStatus.COMPLETED


def test_bad_batches_are_refused_and_write_nothing(queue):
    name = unique_queue("batch_bad")
    with pytest.raises(InvalidBatch, match="empty"):
        queue.enqueue_batch(JobBatch("empty"))
    mixed = [Job(queue_name=name, payload={}), Job(queue_name=name + "x", payload={})]
    with pytest.raises(InvalidBatch, match="mixes queues"):
        queue.enqueue_batch(JobBatch("mixed", jobs=mixed))
    assert sum(queue.get_job_counts_by_status(name).values()) == 0


def test_fail_fast_batches_names_those_whose_mode_is_fail_fast(queue):
    """What a worker reads once a batch, to know whether its held jobs may start on their
    claim's checks: the fail-fast batches among those asked, unknown ids left out."""
    import uuid

    name = unique_queue("batch_modes")
    ids = {
        mode: queue.enqueue_batch(make_batch(name, 2, mode)) for mode in PartialFailureMode.values
    }
    unknown = uuid.uuid4()
    assert queue.fail_fast_batches([*ids.values(), unknown]) == {ids[PartialFailureMode.FAIL_FAST]}
    assert queue.fail_fast_batches([ids[PartialFailureMode.COLLECT_ERRORS]]) == set()
    assert queue.fail_fast_batches([]) == set()
