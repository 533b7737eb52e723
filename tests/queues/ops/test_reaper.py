from __future__ import annotations

from datetime import timedelta

from queues.api import DequeueOptions, Job, JobStatus
from tests.queues.conftest import unique_queue

LEASE = timedelta(seconds=60)


def test_expired_leases_are_requeued_or_declared_dead(queue):
    name = unique_queue("reap")
    retryable = queue.enqueue(Job(queue_name=name, payload={"n": 1}, max_attempts=3))
    last_try = queue.enqueue(Job(queue_name=name, payload={"n": 2}, max_attempts=1))
    claimed = queue.dequeue(name, DequeueOptions.batch(2).with_lease_duration(LEASE))
    assert {job.id for job in claimed} == {retryable, last_try}

    queue.clock.advance(LEASE - timedelta(seconds=1))
    early = queue.requeue_stale_jobs()
    assert early.requeued == [] and early.dead == []

    queue.clock.advance(timedelta(seconds=2))
    recovery = queue.requeue_stale_jobs(ran_by="test")
    assert recovery.requeued == [retryable]
    assert recovery.dead == [last_try]
    requeued = queue.get_job(retryable)
    assert (requeued.status, requeued.attempts) == (JobStatus.PENDING, 1), "the run counted"
    assert requeued.scheduled_at == queue.clock.now()
    assert "lease expired" in requeued.error_message
    assert queue.get_job(last_try).status == JobStatus.DEAD
    # A second pass finds nothing more.
    again = queue.requeue_stale_jobs()
    assert again.requeued == [] and again.dead == []


def test_reaper_can_be_limited_to_one_queue(queue):
    mine, other = unique_queue("reap_mine"), unique_queue("reap_other")
    for name in (mine, other):
        queue.enqueue(Job(queue_name=name, payload={}))
        queue.dequeue(name, DequeueOptions.batch(1).with_lease_duration(LEASE))
    queue.clock.advance(LEASE * 2)
    assert len(queue.requeue_stale_jobs(mine).requeued) == 1
    assert queue.get_job_counts_by_status(other)["Running"] == 1


def test_reaper_runs_are_recorded(db_queue):
    from queues.models import ReaperRun

    name = unique_queue("reap_record")
    job_id = db_queue.enqueue(Job(queue_name=name, payload={}))
    db_queue.dequeue(name, DequeueOptions.batch(1).with_lease_duration(LEASE))
    db_queue.clock.advance(LEASE * 2)
    db_queue.requeue_stale_jobs(ran_by="worker-7")
    run = ReaperRun.objects.latest("ran_at")
    assert run.ran_by == "worker-7"
    assert run.requeued_ids == [str(job_id)] and run.dead_ids == []
