"""`manage.py runworker` (child processes) keeps the promises of Django's tasks API and of
any handler: whatever exception a handler or task raises fails its job (retried as a
failure is) and the worker goes on; a real SIGINT still drains; every attempt names the
worker process that made it, on every path; a task's times and workers through a retry run
by two processes; task_finished for a return value that cannot be stored."""

from __future__ import annotations

import json
import signal
import socket
import uuid
from datetime import timedelta

import pytest
from django.tasks.base import TaskResultStatus

from queues.api import Job, JobQueue, JobStatus, RetryStrategy
from queues.enums import AttemptEnd
from queues.models import WorkerProcess
from tests.workers.runworker.test_runworker import (  # noqa: F401  (the fixture)
    enqueue_work,
    log_lines,
    runworker,
)
from tests.workers.support import contract_jobs as jobs
from tests.workers.support.helpers import wait_until
from tests.workers.support.subprocess_jobs import WORK_QUEUE

pytestmark = pytest.mark.django_db(transaction=True)

INCLUDE = ["--include", jobs.__name__]
RETRY_NOW = RetryStrategy.fixed(timedelta(0)).to_dict()


def process_of(run) -> uuid.UUID:
    """The `WorkerProcess` id of a running `runworker` (no --processes)."""
    rows = WorkerProcess.objects.filter(pid=run.proc.pid, hostname=socket.gethostname())
    wait_until(rows.exists, 30, "the worker process did not register")
    return rows.get().id


def test_whatever_a_handler_raises_fails_its_job_and_the_worker_goes_on(runworker):  # noqa: F811
    queue = JobQueue()
    handled = {}
    for kind in jobs.RAISED:
        for name in (jobs.RAISES, jobs.RAISES_ASYNC):
            # With a timeout a sync handler runs in a thread of its own; without, in its slot.
            for timeout in (None, timedelta(minutes=1)):
                job = Job(
                    queue_name=name,
                    payload={"raise": kind},
                    max_attempts=2,
                    retry_strategy=RETRY_NOW,
                    timeout=timeout,
                )
                handled[queue.enqueue(job)] = kind
    tasks = {
        (kind, task): task.enqueue(kind)
        for kind in jobs.RAISED
        for task in (jobs.task_raises, jobs.task_raises_async)
    }
    after = jobs.noop.enqueue()

    # One slot per queue: a handler that took its slot (or the event loop) down would leave
    # the jobs behind it unrun, and --burst would never exit.
    queues = [jobs.RAISES, jobs.RAISES_ASYNC, jobs.TASKS]
    run = runworker(*queues, "--burst", "--concurrency", "1", "--batch-size", "1", *INCLUDE)
    assert run.wait(120) == 0, run.text()

    for job_id, kind in handled.items():
        job = queue.get_job(job_id)
        assert (job.status, job.attempts) == (JobStatus.DEAD, 2), (kind, job.error_message)
        assert job.error_message == f"{jobs.RAISED[kind].__name__}: raised by the handler"
        rows = queue.get_job_attempts(job_id)
        assert [(row.attempt, row.exception_class) for row in rows] == [
            (1, jobs.class_path(kind)),
            (2, jobs.class_path(kind)),
        ]
    text = run.text()
    for (kind, task), result in tasks.items():
        stored = task.get_result(result.id)
        assert stored.status == TaskResultStatus.FAILED, (kind, task)
        (error,) = stored.errors
        assert error.exception_class is jobs.RAISED[kind]
        assert "raised by the task" in error.traceback
        # Django's task_finished log receiver ran once, for the failure.
        assert text.count(f"Task id={result.id} path={task.module_path} state=FAILED") == 1
        assert f"Task id={result.id} path={task.module_path} state=SUCCESSFUL" not in text
    assert jobs.noop.get_result(after.id).return_value == "done"


def test_a_real_sigint_drains_the_worker(runworker, tmp_path):  # noqa: F811
    log, gate = tmp_path / "jobs.log", tmp_path / "gate"
    running, held = enqueue_work(2, log, gate=gate)
    run = runworker(WORK_QUEUE, "--batch-size", "2", "--concurrency", "1")
    wait_until(lambda: log_lines(log), 30, "no job started")
    run.signal(signal.SIGINT)
    wait_until(lambda: "SIGINT: draining" in run.text(), 10, "the SIGINT was not handled")
    gate.touch()  # the running job may finish within the grace period
    assert run.wait() == 0, run.text()
    started = {parts[1] for parts in log_lines(log) if parts[0] == "start"}
    assert len(started) == 1
    queue = JobQueue()
    first, second = (queue.get_job(job_id) for job_id in (running, held))
    done, released = (first, second) if str(first.id) in started else (second, first)
    assert done.status == JobStatus.COMPLETED
    assert (released.status, released.attempts) == (JobStatus.PENDING, 0)
    assert "Traceback" not in run.text()


def test_every_attempt_names_the_worker_process_that_made_it(runworker, tmp_path):  # noqa: F811
    queue = JobQueue()
    completed = queue.enqueue(Job(queue_name=WORK_QUEUE, payload={"seconds": 0}))
    custom = {"raise": "Custom"}
    failed = queue.enqueue(
        Job(queue_name=jobs.RAISES, payload=custom, max_attempts=2, retry_strategy=RETRY_NOW)
    )
    too_long = timedelta(milliseconds=300)
    timed_out = queue.enqueue(
        Job(queue_name=WORK_QUEUE, payload={"seconds": 3}, timeout=too_long, max_attempts=1)
    )
    run = runworker(WORK_QUEUE, jobs.RAISES, "--concurrency", "2", *INCLUDE)
    me = process_of(run)

    def ended():
        statuses = {queue.get_job(i).status for i in (completed, failed, timed_out)}
        return not statuses & {JobStatus.PENDING, JobStatus.RUNNING}

    wait_until(ended, 30, "the jobs did not end")
    run.signal(signal.SIGTERM)
    assert run.wait() == 0, run.text()

    assert queue.get_job(completed).claimed_by == me
    rows = queue.get_job_attempts(failed)
    assert [(r.ended_by, r.worker_process) for r in rows] == [(AttemptEnd.ERROR, me)] * 2
    (timeout,) = queue.get_job_attempts(timed_out)
    assert (timeout.ended_by, timeout.worker_process) == (AttemptEnd.TIMEOUT, me)
    assert queue.get_job(timed_out).status == JobStatus.TIMED_OUT
    for row in [*rows, timeout]:
        assert row.started_at is not None and row.started_at <= row.failed_at

    # Reaped: the worker is killed mid-run and its lease expires.
    gate = tmp_path / "gate"
    (reaped,) = enqueue_work(1, tmp_path / "jobs.log", gate=gate)
    killed = runworker(WORK_QUEUE, "--lease", "2")
    victim = process_of(killed)
    wait_until(lambda: queue.get_job(reaped).status == JobStatus.RUNNING, 30, "not running")
    killed.stop()
    wait_until(lambda: queue.requeue_stale_jobs().requeued, 30, "the reaper took nothing back")
    (row,) = queue.get_job_attempts(reaped)
    assert (row.ended_by, row.worker_process) == (AttemptEnd.LEASE_EXPIRED, victim)
    assert row.started_at is not None
    assert victim != me


def test_a_tasks_times_and_workers_through_a_retry_run_by_two_processes(
    runworker,  # noqa: F811
    tmp_path,
    settings,
):
    settings.TASKS = {
        "default": {
            "BACKEND": "queues.tasks_backend.HammerwebBackend",
            "QUEUES": [],
            "OPTIONS": {"MAX_ATTEMPTS": 3},
        }
    }
    gate, log = tmp_path / "gate", tmp_path / "seen.log"
    result = jobs.fails_until.enqueue(str(gate), str(log))
    first_probe = jobs.whose_process.enqueue()
    run = runworker(jobs.TASKS, "--burst", *INCLUDE)  # the retry waits: the burst ends
    assert run.wait() == 0, run.text()
    first = jobs.whose_process.get_result(first_probe.id).return_value
    queue = JobQueue()
    (row,) = queue.get_job_attempts(result.id)

    result.refresh()  # a retry waits: the attempt that ran keeps its start and its worker
    assert result.status == TaskResultStatus.READY and not result.is_finished
    assert (result.attempts, result.worker_ids) == (1, [first])
    assert result.started_at == result.last_attempted_at == row.started_at is not None
    assert result.finished_at is None
    assert [error.exception_class for error in result.errors] == [ConnectionError]

    gate.touch()
    queue.retry_job(result.id)  # due now, not after the backoff
    second_probe = jobs.whose_process.enqueue()
    again = runworker(jobs.TASKS, "--burst", *INCLUDE)
    assert again.wait() == 0, again.text()
    second = jobs.whose_process.get_result(second_probe.id).return_value
    assert first != second and uuid.UUID(first) and uuid.UUID(second)

    result.refresh()
    job = queue.get_job(result.id)
    assert result.status == TaskResultStatus.SUCCESSFUL and result.return_value == {"attempt": 2}
    assert (result.attempts, result.worker_ids) == (2, [first, second])
    assert result.started_at == row.started_at < result.last_attempted_at == job.started_at
    assert result.finished_at == job.completed_at >= result.last_attempted_at
    assert len(result.errors) == 1
    # What the task saw of its own result, attempt by attempt, in its worker.
    seen = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(s["attempt"], s["process"], s["worker_ids"], s["errors"]) for s in seen] == [
        (1, first, [first], 0),
        (2, second, [first, second], 1),
    ]
    assert {s["started_at"] for s in seen} == {row.started_at.isoformat()}
    assert seen[1]["last_attempted_at"] == job.started_at.isoformat()


def test_task_finished_is_sent_once_when_a_return_value_cannot_be_stored(runworker):  # noqa: F811
    results = {kind: jobs.returns_unstorable.enqueue(kind) for kind in ("object", "nan", "nul")}
    run = runworker(jobs.TASKS, "--burst", *INCLUDE)
    assert run.wait() == 0, run.text()
    text, path = run.text(), jobs.returns_unstorable.module_path
    for kind, result in results.items():
        stored = jobs.returns_unstorable.get_result(result.id)
        assert stored.status == TaskResultStatus.FAILED, kind
        assert len(stored.errors) == 1
        assert text.count(f"Task id={result.id} path={path} state=FAILED") == 1, kind
        assert f"Task id={result.id} path={path} state=SUCCESSFUL" not in text


def test_a_process_that_died_is_named_by_the_attempts_it_ended(runworker, tmp_path):  # noqa: F811
    log = tmp_path / "jobs.log"
    queue = JobQueue()
    poison = Job(queue_name=WORK_QUEUE, payload={"exit": 1, "log": str(log)}, max_attempts=2)
    queue.enqueue(poison)
    # Supervised children (one process alone has no supervisor to see it die).
    run = runworker(WORK_QUEUE, "--processes", "2", "--batch-size", "1")
    wait_until(lambda: queue.get_job(poison.id).status == JobStatus.DEAD, 60, "not Dead")
    run.stop()
    pids = [int(parts[3]) for parts in log_lines(log) if parts[0] == "start"]
    rows = queue.get_job_attempts(poison.id)
    assert [row.ended_by for row in rows] == [AttemptEnd.PROCESS_DIED] * 2
    # Each death's row names the child that died: the process its handler ran in.
    for row, pid in zip(rows, pids, strict=True):
        assert WorkerProcess.objects.get(id=row.worker_process).pid == pid
    assert rows[0].worker_process != rows[1].worker_process
