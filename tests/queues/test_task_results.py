"""A task's result through its attempts, by Django's definitions: `started_at` the first
attempt's start, `last_attempted_at` the latest's (kept while a retry waits), `finished_at`
once finished, `worker_ids` the worker process of each attempt; `task_finished` sent once,
with the failure, for whatever a task raises or returns that cannot be stored; and a worker
on a TestQueue fails whatever a handler raises. Time is a MockClock; the worker runs
its handlers as a worker does (`execute`, or a `Worker` in a thread)."""

from __future__ import annotations

import threading
import uuid
from datetime import timedelta

import pytest
from django.tasks.base import TaskResultStatus
from django.tasks.signals import task_finished, task_started
from django.utils import timezone

from queues.api import DequeueOptions, Job, JobOutcome, JobQueue, MockClock, TestQueue
from queues.enums import JobStatus
from queues.tasks import results
from queues.tasks.jobs import task_payload
from queues.tasks.results import UNKNOWN_WORKER, result_from_job, running_result, task_of
from queues.tasks_backend import HammerwebBackend
from tests.conftest import unique_queue
from tests.workers.support import contract_jobs as jobs
from workers import tasks
from workers.api import Worker, dispatch
from workers.runtime.executor import EventLoop, execute

pytestmark = pytest.mark.django_db(transaction=True)  # handlers close their connections
HAMMERWEB = "queues.tasks_backend.HammerwebBackend"


@pytest.fixture
def three_attempts(settings):
    settings.TASKS = {
        "default": {"BACKEND": HAMMERWEB, "QUEUES": [], "OPTIONS": {"MAX_ATTEMPTS": 3}}
    }


@pytest.fixture
def loop():
    loop = EventLoop()
    yield loop
    loop.close()


def run_once(queue, loop, process, outcome=None):
    """Claim the task's job as worker process `process` and run it (or record `outcome`)."""
    (job,) = queue.dequeue(jobs.TASKS, DequeueOptions.batch(1), claimed_by=process)
    queue.finish_job_run(job, outcome or execute(dispatch, job, None, loop).outcome)
    return job


def test_times_and_workers_of_each_attempt_through_retries(three_attempts, loop, tmp_path):
    gate = tmp_path / "gate"
    result = jobs.fails_until.enqueue(str(gate), str(tmp_path / "seen.log"))
    queue = JobQueue(clock=MockClock())
    first, second, third = (uuid.uuid4() for _ in range(3))
    began = queue.now()
    run_once(queue, loop, first)

    result.refresh()  # a retry waits
    assert (result.status, result.attempts, result.worker_ids) == ("READY", 1, [str(first)])
    assert result.started_at == result.last_attempted_at == began
    assert result.finished_at is None

    queue.clock.advance(timedelta(hours=2))  # past the backoff
    retried = queue.now()
    (job,) = queue.dequeue(jobs.TASKS, DequeueOptions.batch(1), claimed_by=second)
    result.refresh()  # the second attempt runs
    assert result.status == TaskResultStatus.RUNNING
    assert result.worker_ids == [str(first), str(second)]
    assert (result.started_at, result.last_attempted_at) == (began, retried)
    queue.finish_job_run(job, JobOutcome.timed_out())

    queue.clock.advance(timedelta(hours=2))
    last = queue.now()
    gate.touch()
    run_once(queue, loop, third)
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL and result.return_value == {"attempt": 3}
    assert result.worker_ids == [str(first), str(second), str(third)]
    assert (result.started_at, result.last_attempted_at) == (began, last)
    assert result.finished_at == queue.get_job(result.id).completed_at
    assert [row.started_at for row in queue.get_job_attempts(result.id)] == [began, retried]


def test_a_failed_tasks_last_attempt_and_finish(loop):
    result = jobs.task_raises.enqueue("Custom")
    queue = JobQueue(clock=MockClock())
    process = uuid.uuid4()
    began = queue.now()
    run_once(queue, loop, process)
    result.refresh()
    assert (result.status, result.worker_ids) == (TaskResultStatus.FAILED, [str(process)])
    assert result.started_at == result.last_attempted_at == began
    assert result.finished_at == queue.get_job(result.id).failed_at
    assert result.errors[0].exception_class is jobs.Custom


def test_an_attempt_whose_claim_named_no_process(loop):
    result = jobs.noop.enqueue()
    queue = JobQueue(clock=MockClock())
    run_once(queue, loop, None)
    result.refresh()
    assert result.worker_ids == [UNKNOWN_WORKER]


@pytest.mark.parametrize("kind", ["object", "nan", "nul", "KeyboardInterrupt", "GeneratorExit"])
def test_task_finished_is_sent_once_with_the_failure(kind, loop):
    if kind in jobs.RAISED:
        task = jobs.task_raises_async if kind == "GeneratorExit" else jobs.task_raises
    else:
        task = jobs.returns_unstorable
    result = task.enqueue(kind)
    signals = []

    def started(sender, task_result, **kwargs):
        signals.append(("started", sender, task_result.status))

    def finished(sender, task_result, **kwargs):
        signals.append(("finished", sender, task_result.status, len(task_result.errors)))

    task_started.connect(started)
    task_finished.connect(finished)
    try:
        run_once(JobQueue(clock=MockClock()), loop, uuid.uuid4())
    finally:
        task_started.disconnect(started)
        task_finished.disconnect(finished)
    assert signals == [
        ("started", HammerwebBackend, TaskResultStatus.RUNNING),
        ("finished", HammerwebBackend, TaskResultStatus.FAILED, 1),
    ]
    result.refresh()
    assert result.status == TaskResultStatus.FAILED and len(result.errors) == 1


@pytest.mark.parametrize("handler", [jobs.raises, jobs.raises_async], ids=["sync", "async"])
@pytest.mark.parametrize("timeout", [None, timedelta(minutes=1)], ids=["in-slot", "own-thread"])
def test_a_worker_on_a_test_queue_fails_whatever_a_handler_raises(handler, timeout):
    queue = TestQueue()
    name = unique_queue("raises")
    ids = {
        queue.enqueue(
            Job(queue_name=name, payload={"raise": kind}, max_attempts=1, timeout=timeout)
        ): kind
        for kind in jobs.RAISED
    }
    ok = queue.enqueue(Job(queue_name=name, payload={}))

    def handle(job):
        return handler(job) if job.payload else "done"

    worker = Worker(queue, name, handle, poll_interval=timedelta(milliseconds=20), burst=True)
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    thread.join(30)
    assert not thread.is_alive(), "the burst worker did not return"
    for job_id, kind in ids.items():
        assert queue.get_job(job_id).status == JobStatus.DEAD, kind
        (row,) = queue.get_job_attempts(job_id)
        assert row.exception_class == jobs.class_path(kind)
    assert queue.get_job(ok).result == "done"


class OtherBackend(HammerwebBackend):
    """A backend of another class, to tell which one sent a signal."""


def test_a_first_attempts_result_is_built_from_its_row_as_any_result_is(loop, monkeypatch):
    for process in (uuid.uuid4(), None):
        if process is None:
            jobs.noop.enqueue()
        else:
            jobs.fails_until.enqueue("gate", "log")  # args, and a context
        queue = JobQueue(clock=MockClock())
        (job,) = queue.dequeue(jobs.TASKS, DequeueOptions.batch(1), claimed_by=process)
        with monkeypatch.context() as patched:  # the first attempt's own path
            patched.setattr(results, "result_from_job", None)
            fast = running_result(job)
            assert running_result(job, task_of(job)) == fast
        assert fast == result_from_job(job, attempts=[])
        assert fast.status == TaskResultStatus.RUNNING
        assert fast.worker_ids == [str(process) if process else UNKNOWN_WORKER]


def test_a_change_of_tasks_backend_reaches_the_signals_sender(settings, loop):
    senders = []

    def started(sender, task_result, **kwargs):
        senders.append(sender)

    task_started.connect(started)
    try:
        jobs.noop.enqueue()
        run_once(JobQueue(), loop, uuid.uuid4())
        settings.TASKS = {
            "default": {"BACKEND": f"{__name__}.OtherBackend", "QUEUES": [], "OPTIONS": {}}
        }
        jobs.noop.enqueue()
        run_once(JobQueue(), loop, uuid.uuid4())
    finally:
        task_started.disconnect(started)
    assert senders == [HammerwebBackend, OtherBackend]


def test_a_deferred_tasks_plan_is_not_kept():
    tasks._plans.clear()
    later = jobs.noop.using(run_after=timezone.now() + timedelta(hours=1))
    for task, kept in ((later, 0), (jobs.noop, 1)):
        job = Job(queue_name=jobs.TASKS, payload=task_payload(task, [], {}))
        assert tasks._plan_of(job).task == task
        assert len(tasks._plans) == kept
