"""Faults of the handlers, seen from `runworker` processes: a handler thread that runs away,
a handler that kills its process."""

from __future__ import annotations

from datetime import timedelta

import pytest

from queues.api import Job, JobQueue, JobStatus

from .subprocess_jobs import WORK_QUEUE
from .test_runworker import runworker  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_runaway_handler_makes_runworker_exit_1(runworker):  # noqa: F811
    stuck = Job(
        queue_name=WORK_QUEUE, payload={"seconds": 120}, timeout=timedelta(milliseconds=300),
        max_attempts=1,
    )
    queue = JobQueue()
    queue.enqueue(stuck)
    run = runworker(WORK_QUEUE, "--grace-period", "1")
    assert run.wait(60) == 1, run.text()
    assert "its handler is still running 1s after its 0.3s timeout" in run.text()
    assert "supervisor starts a fresh one" in run.text()
    assert queue.get_job(stuck.id).status == JobStatus.TIMED_OUT
