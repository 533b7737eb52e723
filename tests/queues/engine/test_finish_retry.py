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
    job_id = queue.enqueue(Job(queue_name=name, max_attempts=1))
    (job,) = queue.dequeue(name)
    token = job.run_token
    # A failure: written in a transaction (a locking read, then the row), in either call.
    outcome = JobOutcome.failed("boom")

    def finish():
        if many:
            return queue.finish_job_runs([(job, outcome)])[0]
        return queue.finish_job_run(job, outcome)

    with pytest.raises(OperationalError):
        finish()
    assert (job.status, job.run_token) == (JobStatus.RUNNING, token), "job changed anyway"
    assert queue.get_job(job_id).status == JobStatus.RUNNING, "not rolled back"

    recorded = finish()
    assert recorded is not None and recorded.status == JobStatus.DEAD
    assert (job.status, job.run_token) == (JobStatus.DEAD, None)
    assert queue.get_job(job_id).error_message == "boom"
    assert len(fail_once) == 2


def test_a_completion_whose_statement_failed_can_be_written_again(monkeypatch):
    """A plain completion is one statement in autocommit: if it fails (the connection
    dropped before the server took it), nothing was written and the job is as it was."""
    queue = JobQueue()
    name = unique_queue("recomplete")
    job_id = queue.enqueue(Job(queue_name=name))
    (job,) = queue.dequeue(name)
    token = job.run_token
    real, calls = queue.store.complete_free_runs, []

    def flaky(runs, now, check=()):
        calls.append(1)
        if len(calls) == 1:
            raise OperationalError("server closed the connection unexpectedly")
        return real(runs, now, check)

    monkeypatch.setattr(queue.store, "complete_free_runs", flaky)
    outcome = JobOutcome.completed({"ok": True})
    with pytest.raises(OperationalError):
        queue.finish_job_runs([(job, outcome)])
    assert (job.status, job.run_token) == (JobStatus.RUNNING, token), "job changed anyway"
    assert queue.get_job(job_id).status == JobStatus.RUNNING
    (recorded,) = queue.finish_job_runs([(job, outcome)])
    assert recorded is not None and recorded.status == JobStatus.COMPLETED
    assert (job.status, job.run_token) == (JobStatus.COMPLETED, None)
    assert queue.get_job(job_id).result == {"ok": True}
