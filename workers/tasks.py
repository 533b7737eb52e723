"""Running django.tasks jobs in the worker, with Django's `task_started` and
`task_finished` signals. An async task is returned as a coroutine, so that it runs on the
worker's event loop (and its timeout or a cancel can cancel it); a task that takes its
context can ask it whether its run was cancelled (`context.cancel_requested()`)."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from traceback import format_exception

from django.tasks.base import TaskContext, TaskError, TaskResult, TaskResultStatus
from django.tasks.signals import task_finished, task_started
from django.utils import timezone
from django.utils.json import normalize_json

from queues.api import Job
from queues.tasks.jobs import TASK_KEY
from queues.tasks.results import format_error, is_task_job, running_result
from queues.validation import check_json
from workers.runtime.executor import JobError

__all__ = ["HammerwebTaskContext", "is_task_job", "run_task_job"]


@dataclass(frozen=True, slots=True, kw_only=True)
class HammerwebTaskContext(TaskContext):
    """The context a `@task(takes_context=True)` function gets: Django's, and whether its
    run was cancelled (or taken from its worker) while it runs, as `Job.cancel_requested`
    tells a handler."""

    job: Job = field(repr=False, compare=False)

    def cancel_requested(self) -> bool:
        return self.job.cancel_requested()


def run_task_job(job: Job):
    result = running_result(job)
    task = result.task
    sender = type(task.get_backend())
    call_args = list(result.args)
    if job.payload[TASK_KEY].get("takes_context"):
        call_args.insert(0, HammerwebTaskContext(task_result=result, job=job))
    task_started.send(sender=sender, task_result=result)

    if inspect.iscoroutinefunction(task.func):

        async def run_async():
            # Whatever the task raises fails it (KeyboardInterrupt and GeneratorExit too),
            # as in the database worker of django-tasks: a signal to the worker never lands
            # in a task (see `workers.runtime.executor.execute`).
            try:
                value = await task.func(*call_args, **result.kwargs)
            except BaseException as exc:
                _failed(sender, result, exc)
            return _succeeded(sender, result, value)

        return run_async()
    try:
        value = task.func(*call_args, **result.kwargs)
    except BaseException as exc:
        _failed(sender, result, exc)
    return _succeeded(sender, result, value)


def _succeeded(sender, result: TaskResult, value):
    try:
        # A return value that cannot be stored fails the task, and task_finished says so.
        value = normalize_json(value)
        check_json(value, "the task's return value")
    except Exception as exc:
        _failed(sender, result, exc)
    object.__setattr__(result, "_return_value", value)
    object.__setattr__(result, "status", TaskResultStatus.SUCCESSFUL)
    object.__setattr__(result, "finished_at", timezone.now())
    task_finished.send(sender=sender, task_result=result)
    return value


def _failed(sender, result: TaskResult, exc: BaseException):
    """Send `task_finished` (inside the except block, as Django's own backends do, so its
    log receiver sees the exception) and fail the run with the class path and traceback."""
    kind = type(exc)
    path = f"{kind.__module__}.{kind.__qualname__}"
    traceback = "".join(format_exception(exc))
    result.errors.append(TaskError(exception_class_path=path, traceback=traceback))
    object.__setattr__(result, "status", TaskResultStatus.FAILED)
    object.__setattr__(result, "finished_at", timezone.now())
    task_finished.send(sender=sender, task_result=result)
    message = format_error(path, str(exc), traceback)
    raise JobError(message, exception_class=path, traceback=traceback) from exc
