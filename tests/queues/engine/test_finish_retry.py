"""A finish whose transaction fails (a dropped connection at commit, a deadlock) can be
written again: the job given to `finish_job_run(s)` is only changed once it committed."""

from __future__ import annotations

import pytest
from django.db import OperationalError

import queues.signals
from queues.api import Job, JobOutcome, JobQueue, JobStatus
from tests.conftest import unique_queue

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def fail_once(monkeypatch):
    """The first outcome's transaction fails after all its writes, as at its commit."""
    real = queues.signals.run_ended
    calls = []

    def flaky(*args, **kwargs):
        calls.append(1)
        recorded = real(*args, **kwargs)
        if len(calls) == 1:
            raise OperationalError("server closed the connection unexpectedly")
        return recorded

    monkeypatch.setattr(queues.signals, "run_ended", flaky)
    return calls


@pytest.mark.parametrize("many", [False, True], ids=["finish_job_run", "finish_job_runs"])
def test_a_failed_finish_can_be_written_again(fail_once, many):
    queue = JobQueue()
    name = unique_queue("refinish")
    job_id = queue.enqueue(Job(queue_name=name))
    (job,) = queue.dequeue(name)
    token = job.run_token
    # A completion with a result: written by the completion statement, in either call.
    outcome = JobOutcome.completed({"ok": True})

    def finish():
        if many:
            return queue.finish_job_runs([(job, outcome)])[0]
        return queue.finish_job_run(job, outcome)

    with pytest.raises(OperationalError):
        finish()
    assert (job.status, job.run_token) == (JobStatus.RUNNING, token), "job changed anyway"
    assert queue.get_job(job_id).status == JobStatus.RUNNING, "not rolled back"

    recorded = finish()
    assert recorded is not None and recorded.status == JobStatus.COMPLETED
    assert (job.status, job.run_token) == (JobStatus.COMPLETED, None)
    assert queue.get_job(job_id).result == {"ok": True}
    assert len(fail_once) == 2
