"""The django.tasks contract, modelled on Django's own `tests/tasks/` suites, run against
Django's DummyBackend and Hammerweb's backend; then what only Hammerweb's backend does:
jobs, priorities, deferral, and running the tasks in a worker."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from asgiref.sync import async_to_sync
from django.db import transaction
from django.tasks import task_backends
from django.tasks.base import TaskResultStatus
from django.tasks.exceptions import InvalidTask, TaskResultDoesNotExist, TaskResultMismatch
from django.tasks.signals import task_enqueued, task_finished, task_started
from django.utils import timezone

import tests.queues.support.task_functions as tasks
from queues.api import JobPriority, JobQueue, JobStatus, MockClock
from queues.tasks.jobs import job_priority
from queues.tasks_backend import HammerwebBackend
from tests.workers.support.helpers import running, wait_until
from workers.api import Worker, dispatch

DUMMY = "django.tasks.backends.dummy.DummyBackend"
HAMMERWEB = "queues.tasks_backend.HammerwebBackend"

pytestmark = pytest.mark.django_db


@pytest.fixture(params=[DUMMY, HAMMERWEB], ids=["dummy", "hammerweb"])
def backend(request, settings):
    settings.TASKS = {"default": {"BACKEND": request.param, "QUEUES": []}}
    backend = task_backends["default"]
    yield backend
    if request.param == DUMMY:
        backend.clear()


@pytest.fixture
def hammerweb(settings):
    settings.TASKS = {"default": {"BACKEND": HAMMERWEB, "QUEUES": []}}
    return task_backends["default"]


# The contract ---------------------------------------------------------------------------
def test_enqueue_task(backend):
    result = tasks.noop_task.enqueue(1, two=2)
    assert result.status == TaskResultStatus.READY
    assert result.task == tasks.noop_task
    assert (result.args, result.kwargs) == ([1], {"two": 2})
    assert result.backend == "default"
    assert result.enqueued_at is not None
    assert result.started_at is None and result.finished_at is None
    assert not result.is_finished
    assert result.attempts == 0
    assert len(result.id) < 64
    with pytest.raises(ValueError, match="Task has not finished yet"):
        _ = result.return_value


def test_enqueue_async_task_and_aenqueue(backend):
    result = async_to_sync(tasks.noop_task_async.aenqueue)()
    assert result.status == TaskResultStatus.READY
    assert result.task.func is tasks.noop_task_async.func


def test_get_result_round_trip(backend):
    result = tasks.calculate_meaning_of_life.enqueue()
    fetched = tasks.calculate_meaning_of_life.get_result(result.id)
    assert fetched.id == result.id
    assert fetched.status == TaskResultStatus.READY
    assert fetched.task.func is tasks.calculate_meaning_of_life.func
    assert async_to_sync(backend.aget_result)(result.id).id == result.id
    result.refresh()
    assert result.status == TaskResultStatus.READY


def test_get_missing_result(backend):
    for bad in ("123", "00000000-0000-0000-0000-000000000000"):
        with pytest.raises(TaskResultDoesNotExist):
            backend.get_result(bad)


def test_get_result_of_another_task(backend):
    result = tasks.noop_task.enqueue()
    with pytest.raises(TaskResultMismatch):
        tasks.calculate_meaning_of_life.get_result(result.id)


def test_enqueued_signal(backend):
    seen = []

    def receiver(sender, task_result, **kwargs):
        seen.append((sender, task_result.id))

    task_enqueued.connect(receiver)
    try:
        result = tasks.noop_task.enqueue()
    finally:
        task_enqueued.disconnect(receiver)
    assert seen == [(type(backend), result.id)]


def test_using_options(backend):
    run_after = timezone.now() + timedelta(hours=1)
    task = tasks.noop_task.using(priority=50, queue_name="reports", run_after=run_after)
    result = task.enqueue()
    assert result.task.priority == 50
    assert result.task.queue_name == "reports"
    assert result.task.run_after == run_after


@pytest.mark.parametrize("priority", [-101, 101, 1.5])
def test_invalid_priority(backend, priority):
    with pytest.raises(InvalidTask):
        tasks.noop_task.using(priority=priority)


def test_naive_run_after_is_refused(backend):
    with pytest.raises(InvalidTask, match="aware"):
        tasks.noop_task.using(run_after=datetime(2030, 1, 1))


def test_arguments_must_be_json(backend):
    with pytest.raises(TypeError):
        tasks.noop_task.enqueue(object())
    assert tasks.noop_task.enqueue((1, 2)).args == [[1, 2]]


def test_feature_flags(backend):
    for flag in ("supports_defer", "supports_async_task", "supports_priority"):
        assert getattr(backend, flag) is True
    expected = type(backend) is HammerwebBackend
    assert backend.supports_get_result is expected


# Hammerweb's backend ------------------------------------------------------------------
def test_jobs_carry_queue_priority_and_deferral(hammerweb):
    run_after = timezone.now() + timedelta(minutes=5)
    result = tasks.noop_task.using(priority=100, queue_name="mail", run_after=run_after).enqueue()
    job = JobQueue().get_job(result.id)
    assert job.queue_name == "mail"
    assert job.priority == JobPriority.CRITICAL
    assert job.scheduled_at == run_after
    assert job.status == JobStatus.PENDING
    assert job.max_attempts == 1


@pytest.mark.parametrize(
    ("priority", "level"),
    [
        (-100, JobPriority.BACKGROUND),
        (-61, JobPriority.BACKGROUND),
        (-60, JobPriority.LOW),
        (-21, JobPriority.LOW),
        (-20, JobPriority.NORMAL),
        (0, JobPriority.NORMAL),
        (20, JobPriority.NORMAL),
        (21, JobPriority.HIGH),
        (60, JobPriority.HIGH),
        (61, JobPriority.CRITICAL),
        (100, JobPriority.CRITICAL),
    ],
)
@pytest.mark.django_db(databases=[])
def test_priority_maps_onto_the_five_levels(priority, level):
    assert job_priority(priority) == level


def test_enqueue_is_part_of_the_callers_transaction(hammerweb):
    with pytest.raises(RuntimeError), transaction.atomic():
        result = tasks.noop_task.enqueue()
        raise RuntimeError("rolled back")
    with pytest.raises(TaskResultDoesNotExist):
        hammerweb.get_result(result.id)


@pytest.mark.django_db(transaction=True)
def test_worker_runs_tasks_and_sends_the_signals(hammerweb):
    results = {
        "meaning": tasks.calculate_meaning_of_life.enqueue(),
        "async": tasks.noop_task_async.enqueue(),
        "failing": tasks.failing_task_value_error.enqueue(),
        "context": tasks.get_attempt.enqueue("x"),
        "complex": tasks.complex_return_value.enqueue(),
    }
    signals = []

    def started(sender, task_result, **kwargs):
        signals.append(("started", sender, task_result.id, task_result.status))

    def finished(sender, task_result, **kwargs):
        signals.append(("finished", sender, task_result.id, task_result.status))

    task_started.connect(started)
    task_finished.connect(finished)
    queue = JobQueue()
    worker = Worker(queue, "default", dispatch, poll_interval=timedelta(milliseconds=20))
    try:
        with running(worker):
            wait_until(
                lambda: all(r.task.get_result(r.id).is_finished for r in results.values()),
                30,
                "tasks did not finish",
            )
    finally:
        task_started.disconnect(started)
        task_finished.disconnect(finished)

    for result in results.values():
        result.refresh()
        assert result.attempts == 1
        assert result.started_at is not None and result.finished_at is not None
    assert results["meaning"].return_value == 42
    assert results["async"].status == TaskResultStatus.SUCCESSFUL
    assert results["async"].return_value is None
    assert results["context"].return_value == {"attempt": 1, "label": "x"}
    assert results["complex"].return_value == {"list": [1, 2], "nested": {"ok": True}}
    failing = results["failing"]
    assert failing.status == TaskResultStatus.FAILED
    with pytest.raises(ValueError, match="Task failed"):
        _ = failing.return_value
    (error,) = failing.errors
    assert error.exception_class is ValueError
    assert "This task failed due to ValueError" in error.traceback
    assert queue.get_job(failing.id).error_message.startswith(
        "builtins.ValueError: This task failed due to ValueError\n\n"
    )

    for name, result in results.items():
        ok = TaskResultStatus.FAILED if name == "failing" else TaskResultStatus.SUCCESSFUL
        mine = [s for s in signals if s[2] == result.id]
        assert mine == [
            ("started", HammerwebBackend, result.id, TaskResultStatus.RUNNING),
            ("finished", HammerwebBackend, result.id, ok),
        ]


@pytest.mark.django_db(transaction=True)  # the handler's call closes its thread's connection
def test_a_tasks_errors_are_those_of_every_failed_attempt(settings):
    from workers.runtime.executor import EventLoop, execute

    settings.TASKS = {
        "default": {"BACKEND": HAMMERWEB, "QUEUES": [], "OPTIONS": {"MAX_ATTEMPTS": 2}}
    }
    result = tasks.failing_task_value_error.enqueue()
    queue, loop = JobQueue(clock=MockClock()), EventLoop()
    try:
        for attempt in (1, 2):
            queue.clock.advance(timedelta(hours=2))  # past the first attempt's backoff
            (job,) = queue.dequeue("default")
            assert job.attempts == attempt
            queue.finish_job_run(job, execute(dispatch, job, None, loop).outcome)
    finally:
        loop.close()
    result.refresh()
    assert result.status == TaskResultStatus.FAILED and result.attempts == 2
    assert [error.exception_class for error in result.errors] == [ValueError, ValueError]
    for error in result.errors:
        assert error.traceback.startswith("Traceback (most recent call last):")
        assert "ValueError: This task failed due to ValueError" in error.traceback
    (row, _) = queue.get_job_attempts(result.id)
    assert row.error == "builtins.ValueError: This task failed due to ValueError"
    assert row.exception_class == "builtins.ValueError"
