"""The operator actions a job offers (`queues.engine.transitions.offered`) are exactly those the
queue carries out: for every state a job can be in, each action succeeds if and only if it is
offered, on the database and on TestQueue."""

from __future__ import annotations

import pytest

from queues.api import InvalidJobTransition, Job, JobOutcome, JobStatus
from queues.engine import transitions
from tests.queues.conftest import unique_queue


def _pending(queue, name):
    return queue.get_job(queue.enqueue(Job(queue_name=name)))


def _recurring(queue, name):
    job = Job(queue_name=name, cron_schedule="0 0 * * * *")
    return queue.get_job(queue.enqueue(job))


def _running(queue, name):
    queue.enqueue(Job(queue_name=name))
    return queue.dequeue_one(name)


def _finished(outcome):
    def make(queue, name):
        queue.enqueue(Job(queue_name=name, max_attempts=1))
        run = queue.dequeue_one(name)
        queue.finish_job_run(run, outcome)
        return queue.get_job(run.id)

    return make


def _cancelled(queue, name):
    job_id = queue.enqueue(Job(queue_name=name))
    queue.cancel_job(job_id)
    return queue.get_job(job_id)


STATES = {
    "pending": _pending,
    "recurring": _recurring,
    "running": _running,
    "completed": _finished(JobOutcome.completed()),
    "dead": _finished(JobOutcome.failed("boom")),
    "timed out": _finished(JobOutcome.timed_out()),
    "failed": _cancelled,
}


def _act(queue, action: str, job) -> bool:
    """Do `action` on `job`; whether the queue did it."""
    calls = {
        transitions.RETRY: lambda: queue.retry_job(job.id),
        transitions.CANCEL: lambda: queue.cancel_job(job.id),
        transitions.MARK_DEAD: lambda: queue.mark_job_dead(job.id),
        transitions.DELETE: lambda: queue.delete_job(job.id),
        transitions.RECURRING: lambda: queue.disable_recurring_job(job.id),
    }
    if action == transitions.RELEASE:
        return queue.release_job_run(job)
    try:
        calls[action]()
    except InvalidJobTransition:
        return False
    return True


@pytest.mark.parametrize("state", STATES)
def test_a_job_offers_exactly_what_the_queue_does(queue, state):
    name = unique_queue("transitions")
    for action in transitions.ACTIONS:
        job = STATES[state](queue, name)
        assert _act(queue, action, job) == (action in transitions.offered(job)), (state, action)


def test_the_statuses_behind_the_states():
    assert transitions.offered(Job(queue_name="q", status=JobStatus.ARCHIVED)) == {"delete"}
    assert transitions.offered(Job(queue_name="q", status=JobStatus.RETRYING)) == {
        "retry",
        "cancel",
        "mark_dead",
        "delete",
    }
    with pytest.raises(ValueError):
        transitions.refusal("explode", Job(queue_name="q"))
