"""The lifecycle signals of a real worker run on every database: handlers that write a row
with the ORM and return a value; a success, a failure retried then dead, a run reaped on a
moved clock. Each receiver sees, from another connection, the state its signal announces
(the writer's group commit is done), and one that raises leaves the outcomes recorded and
the worker running."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest

from queues.api import DequeueOptions, Job, JobQueue, JobStatus, MockClock, RetryStrategy
from queues.ops.maintenance import Reaper
from tests.conftest import unique_queue
from tests.signal_events import Recorder, connected
from tests.workers.support.handler_runs import HandlerRun, record_run
from tests.workers.support.helpers import running, wait_for_status, wait_until
from workers.api import Worker

pytestmark = pytest.mark.django_db(transaction=True)

ms = lambda n: timedelta(milliseconds=n)  # noqa: E731


def handler(job):
    record_run(job)
    if job.payload.get("fail"):
        raise ValueError(job.payload["fail"])
    return {"doubled": job.payload["n"] * 2}


def handler_rows(job) -> int:
    return HandlerRun.objects.filter(job_id=job.id).count()


def worker_for(queue, name: str) -> Worker:
    return (
        Worker(queue, name, handler)
        .with_poll_interval(ms(20))
        .with_batch_size(4)
        .with_batch_concurrency(2)
    )


def test_a_worker_runs_signals_after_each_commit(handler_runs):
    queue = JobQueue(clock=MockClock())
    name = unique_queue("sig_worker")
    recorder = Recorder(also=handler_rows)
    retry = RetryStrategy.fixed(timedelta(seconds=30)).to_dict()
    with connected(recorder):
        ok = queue.enqueue_many([Job(queue_name=name, payload={"n": n}) for n in range(3)])
        bad = queue.enqueue(
            Job(queue_name=name, payload={"n": 9, "fail": "no"}, max_attempts=2,
                retry_strategy=retry)
        )  # fmt: skip
        with running(worker_for(queue, name)):
            wait_for_status(queue, name, JobStatus.COMPLETED, 3, 30)
            wait_until(lambda: "job_retried" in recorder.names(bad), 30, "no retry sent")
            queue.clock.advance(timedelta(seconds=31))
            wait_until(lambda: "job_dead" in recorder.names(bad), 30, "no dead sent")

    for n, job_id in enumerate(ok):
        assert recorder.names(job_id) == ["job_enqueued", "job_started", "job_succeeded"]
        succeeded = recorder.of(job_id)[-1]
        assert succeeded["result"] == {"doubled": n * 2} and succeeded["attempt"] == 1
        assert succeeded["run_time"] >= 0 and succeeded["queue_name"] == name
        # Seen elsewhere when sent: the completion and the handler's own row, committed.
        assert (succeeded["committed_status"], succeeded["also"]) == (JobStatus.COMPLETED, 1)
    assert recorder.names(bad) == [
        "job_enqueued", "job_started", "job_failed", "job_retried",
        "job_started", "job_failed", "job_dead",
    ]  # fmt: skip
    events = recorder.of(bad)
    assert events[2]["error"] == "ValueError: no"
    assert events[2]["exception_class"] == "builtins.ValueError"
    assert 'raise ValueError(job.payload["fail"])' in events[2]["traceback"]
    assert [events[i]["committed_status"] for i in (2, 3, 5, 6)] == [
        JobStatus.PENDING, JobStatus.PENDING, JobStatus.DEAD, JobStatus.DEAD,
    ]  # fmt: skip
    assert [events[i]["attempt"] for i in (1, 2, 4, 5, 6)] == [1, 1, 2, 2, 2]
    assert events[6]["also"] == 2, "both runs' rows committed when dead was sent"
    assert not any(event["in_transaction"] for event in recorder.events)


def test_a_run_reaped_on_a_moved_clock_is_sent(handler_runs):
    queue = JobQueue(clock=MockClock())
    name = unique_queue("sig_reaped")
    job_id = queue.enqueue(Job(queue_name=name, payload={"n": 1}, max_attempts=2))
    (lost,) = queue.dequeue(name, DequeueOptions.batch(1).with_lease_duration(ms(1000)))
    recorder = Recorder(also=handler_rows)
    with connected(recorder):
        queue.clock.advance(timedelta(seconds=5))
        assert Reaper(queue).run_once().requeued == [job_id]
        with running(worker_for(queue, name)):
            wait_for_status(queue, name, JobStatus.COMPLETED, 1, 30)
            wait_until(lambda: "job_succeeded" in recorder.names(job_id), 30, "not sent")
    assert recorder.names(job_id) == ["job_reaped", "job_retried", "job_started", "job_succeeded"]
    reaped = recorder.of(job_id)[0]
    assert (reaped["status"], reaped["attempt"], reaped["run_time"]) == (
        JobStatus.PENDING, 1, 5.0,
    )  # fmt: skip
    assert reaped["committed_status"] == JobStatus.PENDING and reaped["also"] == 0
    assert recorder.of(job_id)[-1]["attempt"] == 2 and lost.id == job_id


def test_a_receiver_that_raises_leaves_outcomes_recorded_and_the_worker_running(
    handler_runs, caplog
):
    queue = JobQueue()
    name = unique_queue("sig_broken")
    heard = []

    def broken(signal, sender, job_id, **arguments):
        heard.append((signal.name, job_id))
        raise RuntimeError("the integration is down")

    with connected(broken), caplog.at_level(logging.ERROR, logger="queues.signals"):
        first = queue.enqueue(Job(queue_name=name, payload={"n": 1}))
        with running(worker_for(queue, name)):
            wait_for_status(queue, name, JobStatus.COMPLETED, 1, 30)
            # The worker still claims and records after the receiver raised in its writer.
            later = queue.enqueue(Job(queue_name=name, payload={"n": 2, "fail": "x"},
                                      max_attempts=1))  # fmt: skip
            wait_for_status(queue, name, JobStatus.DEAD, 1, 30)
    assert queue.get_job(first).result == {"doubled": 2}
    assert HandlerRun.objects.filter(job_id__in=[first, later]).count() == 2
    assert ("job_succeeded", first) in heard and ("job_dead", later) in heard
    raised = [r for r in caplog.records if r.name == "queues.signals"]
    assert len(raised) == len(heard) == 7  # enqueued, started, succeeded; x2 + failed, dead
    assert all("the integration is down" in str(r.exc_info[1]) for r in raised)
