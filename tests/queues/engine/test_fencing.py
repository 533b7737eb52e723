"""A run is fenced by its token: after a release, a reap or an operator's retry, every write
of the old run is refused and changes nothing."""

from __future__ import annotations

from datetime import timedelta

import pytest

from queues.api import LOST, STARTED, DequeueOptions, Job, JobOutcome, JobStatus
from tests.queues.conftest import unique_queue

LEASE = timedelta(seconds=30)


def lose_by_release(queue, run):
    assert queue.release_job_run(run)


def lose_by_reap(queue, run):
    queue.clock.advance(LEASE + timedelta(seconds=1))
    assert run.id in queue.requeue_stale_jobs().requeued


def lose_by_operator_retry(queue, run):
    queue.retry_job(run.id)


@pytest.mark.parametrize("lose", [lose_by_release, lose_by_reap, lose_by_operator_retry])
def test_every_write_of_a_stale_run_is_refused(queue, lose):
    name = unique_queue("fenced")
    job_id = queue.enqueue(Job(queue_name=name, payload={}, max_attempts=5))
    options = DequeueOptions.batch(1).with_lease_duration(LEASE)
    stale = queue.dequeue(name, options)[0]
    lose(queue, stale)
    current = queue.dequeue(name, options)[0]
    assert current.id == job_id and current.run_token != stale.run_token
    before = queue.get_job(job_id)

    assert queue.finish_job_run(stale, JobOutcome.completed("stale")) is None
    assert queue.finish_job_run(stale, JobOutcome.failed("stale")) is None
    assert not queue.heartbeat_job(stale, timedelta(hours=1))
    assert queue.heartbeat_jobs([stale], timedelta(hours=1)) == 0
    assert not queue.release_job_run(stale)
    assert queue.start_claimed_run(stale) == LOST

    after = queue.get_job(job_id)
    for field in ("status", "attempts", "lease_expires_at", "run_token", "result", "started_at"):
        assert getattr(after, field) == getattr(before, field), field
    # The current run is unaffected.
    assert queue.start_claimed_run(current) == STARTED
    assert queue.finish_job_run(current, JobOutcome.completed()).status == JobStatus.COMPLETED


def test_finished_run_cannot_write_again(queue):
    name = unique_queue("once")
    queue.enqueue(Job(queue_name=name, payload={}))
    run = queue.dequeue_one(name)
    assert queue.finish_job_run(run, JobOutcome.completed(1)) is not None
    assert queue.finish_job_run(run, JobOutcome.completed(2)) is None
    assert not queue.heartbeat_job(run, LEASE)
    assert queue.get_job(run.id).result == 1


def test_heartbeat_extends_the_lease_from_now(queue):
    name = unique_queue("beat")
    queue.enqueue(Job(queue_name=name, payload={}))
    run = queue.dequeue(name, DequeueOptions.batch(1).with_lease_duration(LEASE))[0]
    queue.clock.advance(timedelta(seconds=20))
    assert queue.heartbeat_job(run, LEASE)
    queue.clock.advance(timedelta(seconds=20))  # 40 s after the claim, 20 s after the beat
    assert queue.requeue_stale_jobs().requeued == []
    stored = queue.get_job(run.id)
    assert stored.lease_expires_at == queue.clock.now() + timedelta(seconds=10)
    assert stored.last_heartbeat_at == queue.clock.now() - timedelta(seconds=20)


@pytest.mark.parametrize("in_batch", [False, True], ids=["plain", "batch"])
@pytest.mark.parametrize("stale_first", [True, False], ids=["stale_first", "stale_last"])
def test_a_job_finished_by_its_stale_run_and_its_new_one_in_one_write(queue, in_batch, stale_first):
    """Reaped and claimed again by the same worker, a job can end twice in one write: by
    the run that lost its lease and by its new one. Only the new run's completion is
    written and answered, whichever comes first, and the job counts once in its batch."""
    from queues.api import JobBatch

    name = unique_queue("two_runs")
    job = Job(queue_name=name, payload={}, max_attempts=3)
    batch_id = queue.enqueue_batch(JobBatch("b", jobs=[job])) if in_batch else None
    if not in_batch:
        queue.enqueue(job)
    options = DequeueOptions.batch(1).with_lease_duration(LEASE)
    (stale,) = queue.dequeue(name, options)
    lose_by_reap(queue, stale)
    (current,) = queue.dequeue(name, options)
    assert current.id == stale.id and current.run_token != stale.run_token
    finished = [(stale, JobOutcome.completed({"run": "stale"})),
                (current, JobOutcome.completed({"run": "current"}))]  # fmt: skip
    if not stale_first:
        finished.reverse()
    answers = dict(
        zip(("stale", "current"), queue.finish_job_runs(finished)[:: 1 if stale_first else -1])
    )
    assert answers["stale"] is None, "the stale run was answered as written"
    assert answers["current"].status == JobStatus.COMPLETED
    stored = queue.get_job(current.id)
    assert (stored.status, stored.result) == (JobStatus.COMPLETED, {"run": "current"})
    if in_batch:
        status = queue.get_batch_status(batch_id)
        assert (status.completed_jobs, status.status) == (1, "Completed")
