"""Running django.tasks jobs in the worker, with Django's `task_started` and
`task_finished` signals. An async task is returned as a coroutine, so that it runs on the
worker's event loop (and its timeout or a cancel can cancel it); a task that takes its
context can ask it whether its run was cancelled (`context.cancel_requested()`)."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from traceback import format_exception
from typing import NamedTuple

from django.core.signals import setting_changed
from django.dispatch import receiver
from django.tasks import Task
from django.tasks.base import TaskContext, TaskError, TaskResult, TaskResultStatus
from django.tasks.signals import task_finished, task_started
from django.utils import timezone
from django.utils.json import normalize_json

from queues.api import Job
from queues.tasks.jobs import TASK_KEY
from queues.tasks.results import format_error, is_task_job, running_result, task_of
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


class TaskPlan(NamedTuple):
    """What running a task's jobs needs, the same for every job of one task and options."""

    task: Task
    sender: type  # the backend's class: the sender of Django's task signals
    is_async: bool
    takes_context: bool


def run_task_job(job: Job):
    plan = _plan_of(job)
    task, sender = plan.task, plan.sender
    result = running_result(job, task)
    call_args = list(result.args)
    if plan.takes_context:
        call_args.insert(0, HammerwebTaskContext(task_result=result, job=job))
    task_started.send(sender=sender, task_result=result)

    if plan.is_async:

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


def _plan_of(job: Job) -> TaskPlan:
    """The plan of `job`'s task, kept per task path and options: resolving the task (its
    import, its options' copy, which the backend validates) and its backend is the same
    work for every job of a task. A deferred task's `run_after` is its own, so its plan is
    made for it alone (kept, such one-off plans would fill the cache)."""
    spec = job.payload[TASK_KEY]
    if spec.get("run_after"):
        return _make_plan(job)
    key = (
        spec.get("path"),
        spec.get("priority", _DEFAULT),
        spec.get("backend", _DEFAULT),
        bool(spec.get("takes_context")),
        job.queue_name,
    )
    try:
        plan = _plans.get(key)
    except TypeError:  # an option that cannot be a key (a payload not made by the backend)
        return _make_plan(job)
    if plan is None:
        generation = _generation[0]
        plan = _make_plan(job)
        # Not kept if the settings changed while it was made: it may name the old backend.
        if len(_plans) < MAX_PLANS and generation == _generation[0]:
            _plans[key] = plan
    return plan


_DEFAULT = object()
#: Plans kept: a process runs a bounded set of tasks and options; past it, more are made
#: per job as before.
MAX_PLANS = 256
_plans: dict[tuple, TaskPlan] = {}
_generation = [0]  # bumped when the plans are forgotten


def _make_plan(job: Job) -> TaskPlan:
    task = task_of(job)
    takes_context = bool(job.payload[TASK_KEY].get("takes_context"))
    is_async = inspect.iscoroutinefunction(task.func)
    return TaskPlan(task, type(task.get_backend()), is_async, takes_context)


@receiver(setting_changed)
def _forget_plans(*, setting, **kwargs) -> None:
    """A change of `TASKS` (tests) may change a task's backend, and one of `USE_TZ` what the
    backend's validation of its options says."""
    if setting in ("TASKS", "USE_TZ"):
        _generation[0] += 1
        _plans.clear()


_SCALARS = frozenset((str, int, float, bool, type(None)))


def _succeeded(sender, result: TaskResult, value):
    try:
        # A return value that cannot be stored fails the task, and task_finished says so.
        if type(value) not in _SCALARS:  # what normalize_json returns as it is
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
