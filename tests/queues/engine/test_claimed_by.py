"""Which worker process claimed a job: the claim stamps it, and the lifeline hands back the
Running jobs of a process that died at once, as the reaper does after a lease."""

from __future__ import annotations

import uuid

import pytest

from queues.api import DequeueOptions, Job, JobOutcome, JobStatus, PriorityWeights
from queues.models import ReaperRun
from queues.ops.maintenance import Lifeline
from tests.queues.conftest import unique_queue

DIED = "The worker process h:1 died (killed by SIGKILL) while the job was Running"


@pytest.mark.parametrize("weights", [None, PriorityWeights()], ids=["strict", "weighted"])
def test_the_claim_stamps_who_claimed(queue, weights):
    name = unique_queue("stamp")
    queue.enqueue_many([Job(queue_name=name) for _ in range(3)])
    me = uuid.uuid4()
    options = DequeueOptions.batch(2).with_priority_weights(weights)
    claimed = queue.dequeue(name, options, claimed_by=me)
    assert len(claimed) == 2 and all(job.claimed_by == me for job in claimed)
    assert all(queue.get_job(job.id).claimed_by == me for job in claimed)
    (anonymous,) = queue.dequeue(name, options)
    assert anonymous.claimed_by is None


def test_the_lifeline_hands_back_a_dead_processs_jobs(db_queue):
    queue = db_queue
    name = unique_queue("lifeline")
    dead, alive = uuid.uuid4(), uuid.uuid4()
    queue.enqueue_many([Job(queue_name=name) for _ in range(3)])
    finished, *held = queue.dequeue(name, DequeueOptions.batch(3), claimed_by=dead)
    queue.finish_job_run(finished, JobOutcome.completed())
    last = queue.enqueue(Job(queue_name=name, max_attempts=1))
    held += queue.dequeue(name, DequeueOptions.batch(1), claimed_by=dead)
    queue.enqueue(Job(queue_name=name))
    (theirs,) = queue.dequeue(name, DequeueOptions.batch(1), claimed_by=alive)

    recovery = Lifeline(queue, ran_by="supervisor:h:9").hand_back(dead, DIED)

    held_ids = {job.id for job in held}
    assert set(recovery.requeued) == held_ids - {last} and recovery.dead == [last]
    for job_id in held_ids - {last}:
        job = queue.get_job(job_id)
        assert (job.status, job.attempts, job.error_message) == (JobStatus.PENDING, 1, DIED)
        assert job.scheduled_at <= queue.now(), "handed back behind a backoff"
    assert (queue.get_job(last).status, queue.get_job(last).error_message) == ("Dead", DIED)
    assert queue.get_job(finished.id).status == JobStatus.COMPLETED
    assert queue.get_job(theirs.id).status == JobStatus.RUNNING, "a live process's job"
    run = ReaperRun.objects.get()
    assert run.ran_by == "supervisor:h:9" and run.dead_ids == [str(last)]
    # Again: nothing left to hand back, no run recorded.
    assert Lifeline(queue).hand_back(dead, DIED).requeued == []
    assert ReaperRun.objects.count() == 1
