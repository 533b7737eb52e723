"""A real worker fills the error history from what its handlers raise: the exception's class
and traceback, the worker's host and pid, sync and async handlers, time-outs and JobError."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta

import pytest

from queues.api import Job, JobQueue, JobStatus, TestQueue
from queues.engine.history import this_process
from tests.conftest import unique_queue
from tests.workers.support.helpers import running, wait_for_status
from workers.api import JobError, Worker

pytestmark = pytest.mark.django_db(transaction=True)
FAST = timedelta(milliseconds=20)


class ReportFailed(Exception):
    pass


def build_report(job):
    raise ReportFailed(f"no data for {job.payload['day']}")


async def build_report_async(job):
    await asyncio.sleep(0)
    raise ReportFailed("the upstream went away")


def _only_attempt(queue, handler, **settings):
    name = unique_queue("history_worker")
    job_id = queue.enqueue(Job(queue_name=name, payload={"day": "monday"}, max_attempts=1))
    worker = Worker(queue, name, handler, poll_interval=FAST, **settings)
    with running(worker):
        wait_for_status(queue, name, JobStatus.DEAD, 1, 30)
    (row,) = queue.get_job_attempts(job_id)
    return queue.get_job(job_id), row


@pytest.mark.parametrize("make_queue", [JobQueue, TestQueue], ids=["db", "memory"])
@pytest.mark.parametrize("handler", [build_report, build_report_async], ids=["sync", "async"])
def test_a_failed_run_records_the_exceptions_class_and_traceback(make_queue, handler):
    queue = make_queue()
    job, row = _only_attempt(queue, handler)
    assert row.exception_class == f"{__name__}.ReportFailed"
    assert row.traceback.startswith("Traceback (most recent call last):")
    assert f"in {handler.__name__}" in row.traceback
    assert row.traceback.rstrip().endswith(f"ReportFailed: {row.error.split(': ', 1)[1]}")
    assert row.error == job.error_message
    assert (row.attempt, row.ended_by, row.status) == (1, "error", JobStatus.DEAD)
    assert row.worker == this_process()


def test_a_job_error_keeps_its_message_and_records_its_class():
    def handler(job):
        raise JobError("the invoice is already paid")

    job, row = _only_attempt(JobQueue(), handler)
    assert row.error == job.error_message == "the invoice is already paid"
    assert row.exception_class == "workers.runtime.executor.JobError"


def test_a_time_out_is_recorded_as_one():
    def handler(job):
        time.sleep(0.5)

    queue = JobQueue()
    name = unique_queue("history_timeout")
    job_id = queue.enqueue(Job(queue_name=name, max_attempts=1, timeout=timedelta(seconds=0.1)))
    with running(Worker(queue, name, handler, poll_interval=FAST)):
        wait_for_status(queue, name, JobStatus.TIMED_OUT, 1, 30)
    (row,) = queue.get_job_attempts(job_id)
    assert (row.ended_by, row.status) == ("timeout", "TimedOut")
    assert row.error == "Job timed out after 0.1s"
    assert row.exception_class is None and row.worker == this_process()
