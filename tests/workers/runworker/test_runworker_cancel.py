"""Cancelling running jobs of `manage.py runworker` in a child process, on the test database:
an async handler is cancelled mid-await, a sync handler and a `@task` that poll the request
stop, one that ignores it is cut off at its timeout; none of their outcomes is written, the
history says how each handler ended, and each slot runs the next job."""

from __future__ import annotations

import signal
import time
from datetime import timedelta

import pytest

from queues.api import Job, JobQueue, JobStatus
from tests.workers.runworker.test_runworker import log_lines, runworker  # noqa: F401  (the fixture)
from tests.workers.support.helpers import wait_until
from tests.workers.support.subprocess_jobs import (
    CANCEL_ASYNC,
    CANCEL_IGNORE,
    CANCEL_POLL,
    polls_its_context,
)

pytestmark = pytest.mark.django_db(transaction=True)
REASON = "Cancelled by alice in the dashboard: sent twice"
#: The worker checks its runs every second; the rest is room for a loaded machine.
REACHES_WITHIN = 6.0


def _seen(log, word: str) -> set[str]:
    return {parts[1] for parts in log_lines(log) if parts[0] == word}


def test_runworker_stops_the_handlers_of_cancelled_jobs(runworker, tmp_path):  # noqa: F811
    log = tmp_path / "cancel.log"
    queue = JobQueue()
    payload = {"log": str(log)}
    jobs = {
        "async": queue.enqueue(Job(queue_name=CANCEL_ASYNC, payload=payload)),
        "poll": queue.enqueue(
            Job(queue_name=CANCEL_POLL, payload=payload, timeout=timedelta(seconds=60))
        ),
        "ignore": queue.enqueue(
            Job(
                queue_name=CANCEL_IGNORE,
                payload={**payload, "seconds": 3},
                timeout=timedelta(seconds=1.5),
            )
        ),
        "task": polls_its_context.enqueue(str(log), 60).id,
    }
    ids = {str(job_id) for job_id in jobs.values()}
    run = runworker(CANCEL_ASYNC, CANCEL_POLL, CANCEL_IGNORE, "--concurrency", "2",
                    "--grace-period", "10")
    wait_until(lambda: _seen(log, "start") == ids, 60, f"not all started:\n{run.text()}")

    for job_id in jobs.values():
        queue.cancel_job(job_id, reason=REASON)
    asked = time.monotonic()
    cancelled, stopped = {str(jobs["async"])}, {str(jobs["poll"]), str(jobs["task"])}
    wait_until(
        lambda: _seen(log, "cancelled") == cancelled and _seen(log, "stopped") == stopped,
        REACHES_WITHIN,
        f"the handlers were not stopped:\n{run.text()}",
    )
    took = time.monotonic() - asked

    def noted() -> dict:
        return {
            kind: queue.get_job_attempts(job_id)[0].handler_end for kind, job_id in jobs.items()
        }

    expected = {"async": "stopped", "poll": "stopped", "task": "stopped", "ignore": "cut_off"}
    wait_until(lambda: noted() == expected, 30, f"{noted()}\n{run.text()}")
    # The slots are free: a job on each queue runs to its end.
    after = [
        queue.enqueue(Job(queue_name=name, payload={**payload, "seconds": 0}))
        for name in (CANCEL_ASYNC, CANCEL_POLL, CANCEL_IGNORE)
    ]
    wait_until(
        lambda: all(queue.get_job(job_id).status == JobStatus.COMPLETED for job_id in after),
        30,
        f"the next jobs did not run:\n{run.text()}",
    )
    wait_until(lambda: str(jobs["ignore"]) in _seen(log, "done"), 30, "ignoring handler ran on")
    run.signal(signal.SIGTERM)
    assert run.wait() == 0, run.text()

    assert took < REACHES_WITHIN
    for job_id in jobs.values():
        job = queue.get_job(job_id)
        assert (job.status, job.error_message, job.result) == (JobStatus.FAILED, REASON, None)
        (row,) = queue.get_job_attempts(job_id)
        assert row.ended_by == "cancelled" and row.worker.endswith(f":{_pid(log, job_id)}")
    assert polls_its_context.get_result(jobs["task"]).status == "FAILED"
    assert "its handler is asked to stop" in run.text()


def _pid(log, job_id) -> str:
    (pid,) = {parts[2] for parts in log_lines(log) if parts[:2] == ["start", str(job_id)]}
    return pid
