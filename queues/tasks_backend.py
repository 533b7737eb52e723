"""The django.tasks backend (`TASKS = {"default": {"BACKEND":
"queues.tasks_backend.HammerwebBackend"}}`): functions decorated with Django's `@task` become
jobs, run by `manage.py runworker` (`workers.tasks`), and their results are read back from
the jobs table, from any process. Models are imported inside the methods: the backend may be
built before the app registry is ready. See docs/design/vocabulary.md."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from django.tasks import Task
from django.tasks.backends.base import BaseTaskBackend
from django.tasks.base import TaskError, TaskResult, TaskResultStatus
from django.tasks.exceptions import TaskResultDoesNotExist
from django.tasks.signals import task_enqueued
from django.utils.module_loading import import_string

from queues.enums import JobStatus
from queues.task_jobs import TASK_KEY, job_priority, task_payload

_STATUS = {
    JobStatus.PENDING: TaskResultStatus.READY,
    JobStatus.RETRYING: TaskResultStatus.READY,
    JobStatus.RUNNING: TaskResultStatus.RUNNING,
    JobStatus.COMPLETED: TaskResultStatus.SUCCESSFUL,
    JobStatus.ARCHIVED: TaskResultStatus.SUCCESSFUL,
    JobStatus.FAILED: TaskResultStatus.FAILED,
    JobStatus.DEAD: TaskResultStatus.FAILED,
    JobStatus.TIMED_OUT: TaskResultStatus.FAILED,
}


class TaskRunError(Exception):
    """The class given for a failure that was not an exception of the task itself (lease
    expired, timed out, its fail-fast batch failed)."""


def is_task_job(job) -> bool:
    return isinstance(job.payload, dict) and isinstance(job.payload.get(TASK_KEY), dict)


def format_error(exception_class_path: str, message: str, traceback: str) -> str:
    """A failed task's `error_message`: a one-line summary, a blank line, the traceback."""
    first = message.splitlines()[0] if message else ""
    summary = f"{exception_class_path}: {first}" if first else exception_class_path
    return f"{summary}\n\n{traceback}"


def attempt_error(row) -> TaskError:
    """The `TaskError` of a row of the error history: the task's exception class and
    traceback, or (a time-out, a rescue, a cancel) `TaskRunError` and the error."""
    if row.exception_class:
        return TaskError(exception_class_path=row.exception_class, traceback=row.traceback or "")
    return TaskError(exception_class_path=f"{__name__}.TaskRunError", traceback=row.error or "")


def parse_error(text: str) -> TaskError:
    head, sep, traceback = text.partition("\n\n")
    path = head.split(":", 1)[0].strip()
    if sep and path and " " not in path and "." in path:
        return TaskError(exception_class_path=path, traceback=traceback)
    return TaskError(exception_class_path=f"{__name__}.TaskRunError", traceback=text)


@dataclass(frozen=True, slots=True, kw_only=True)
class HammerwebTask(Task):
    """A django.tasks `Task` that can be a unique job (see `queues.engine.unique`): with
    `@task(unique=True)` its key is made of the task and its arguments, so that an equal
    call while one is live enqueues nothing; `.using(unique_key="invoice:42")` gives the
    key instead. `unique_statuses` and `unique_period` are those of `Job`. A duplicate's
    `enqueue` returns the result of the job that holds the key (its id, its status) and
    sends no `task_enqueued`.

    `@task(tags=["billing"], meta={...})` or `.using(tags=..., meta=...)` gives its jobs
    tags and meta (see `queues.tags`; checked at enqueue, as a `Job`'s)."""

    unique: bool = False
    unique_key: str | None = None
    unique_statuses: tuple[str, ...] | None = None
    unique_period: timedelta | None = None
    tags: tuple[str, ...] = ()
    meta: dict | None = None

    def __post_init__(self):
        if isinstance(self.tags, list):  # a frozen task keeps no list its caller may change
            object.__setattr__(self, "tags", tuple(self.tags))
        Task.__post_init__(self)  # slots=True remakes the class: no zero-argument super()

    def using(
        self,
        *,
        unique_key=None,
        unique_statuses=None,
        unique_period=None,
        tags=None,
        meta=None,
        **changes,
    ):
        # Task.using knows only Django's options; the unique ones and tags are this class's.
        task = Task.using(self, **changes)
        own = {"unique_key": unique_key, "unique_period": unique_period, "meta": meta}
        if unique_statuses is not None:
            own["unique_statuses"] = tuple(unique_statuses)
        if tags is not None:
            own["tags"] = tuple(tags) if isinstance(tags, list | tuple | set) else tags
        own = {name: value for name, value in own.items() if value is not None}
        return replace(task, **own) if own else task

    def unique_fields(self, args: list, kwargs: dict) -> dict:
        """The unique options of the job that runs this task with `args` and `kwargs`."""
        key = self.unique_key
        if key is None and not self.unique:
            return {}
        if key is None:
            from queues.engine.unique import (
                unique_key_for,  # imports the models: not at module level
            )

            key = unique_key_for({"task": self.module_path, "args": args, "kwargs": kwargs})
        fields = {"unique_key": key, "unique_period": self.unique_period}
        if self.unique_statuses is not None:
            fields["unique_statuses"] = list(self.unique_statuses)
        return fields


class HammerwebBackend(BaseTaskBackend):
    task_class = HammerwebTask
    supports_defer = True
    supports_async_task = True
    supports_get_result = True
    supports_priority = True

    def __init__(self, alias, params):
        super().__init__(alias, params)
        # Checked by `check()` (at start), not here: Django builds the backend when a module
        # with `@task` functions is imported, and an error there would hide the others.
        self.using = self.options.get("DATABASE", "default")
        self.max_attempts = self.options.get("MAX_ATTEMPTS", 1)

    def check(self, **kwargs):
        from queues.checks import check_tasks_backend

        return [*super().check(**kwargs), *check_tasks_backend(self)]

    def enqueue(self, task: Task, args, kwargs) -> TaskResult:
        from queues.engine.queue import JobQueue
        from queues.models import Job

        self.validate_task(task)
        result = TaskResult(
            task=task,
            id=str(uuid.uuid4()),
            status=TaskResultStatus.READY,
            enqueued_at=None,
            started_at=None,
            finished_at=None,
            last_attempted_at=None,
            args=args,
            kwargs=kwargs,
            backend=self.alias,
            errors=[],
            worker_ids=[],
        )
        own = {}
        if isinstance(task, HammerwebTask):
            own = {**task.unique_fields(args, kwargs), "tags": task.tags, "meta": task.meta}
        job = Job(
            id=uuid.UUID(result.id),
            queue_name=task.queue_name,
            payload=task_payload(task, result.args, result.kwargs),
            priority=job_priority(task.priority),
            max_attempts=self.max_attempts,
            **own,
        )
        if task.run_after is not None:
            job.scheduled_at = task.run_after
        queue = JobQueue(using=self.using)
        job_id, created = queue.enqueue_unique(job)
        while not created:
            holder = queue.get_job(job_id)
            if holder is not None:
                return result_from_job(holder, task)
            job_id, created = queue.enqueue_unique(job)  # deleted meanwhile: the key is free
        object.__setattr__(result, "enqueued_at", job.created_at)
        task_enqueued.send(type(self), task_result=result)
        return result

    def get_result(self, result_id) -> TaskResult:
        from queues.models import Job

        try:
            job_id = uuid.UUID(str(result_id))
        except ValueError:
            raise TaskResultDoesNotExist(result_id) from None
        job = Job.objects.using(self.using).filter(id=job_id).first()
        if job is None or not is_task_job(job):
            raise TaskResultDoesNotExist(result_id)
        return result_from_job(job, attempts=list(job.failed_attempts.order_by("id")))


def task_of(job) -> Task:
    """The `Task` a job runs, with the options it was enqueued with."""
    spec = job.payload[TASK_KEY]
    task = import_string(spec["path"])
    if not isinstance(task, Task):
        raise TypeError(f"{spec['path']} is not a task")
    run_after = datetime.fromisoformat(spec["run_after"]) if spec.get("run_after") else None
    changes = {
        "priority": spec.get("priority", task.priority),
        "queue_name": job.queue_name,
        "backend": spec.get("backend", task.backend),
        "run_after": run_after,
    }
    if any(getattr(task, name) != value for name, value in changes.items()):
        task = task.using(**{k: v for k, v in changes.items() if v is not None})
    return task


def result_from_job(job, task: Task | None = None, attempts=None) -> TaskResult:
    """The `TaskResult` of a task's job, as it stands in the row (`task`: that of a job
    that holds the unique key a task was enqueued with, whatever the job runs); its `errors`
    are those of `attempts` (the job's error history, oldest first) if it has any, else the
    row's last error. The worker builds one for every task it runs, without the history (no
    read)."""
    status = _STATUS[JobStatus(job.status)]
    if job.status == JobStatus.ARCHIVED and job.completed_at is None:
        status = TaskResultStatus.FAILED
    finished_at = None
    if status == TaskResultStatus.SUCCESSFUL:
        finished_at = job.completed_at
    elif status == TaskResultStatus.FAILED:
        finished_at = job.failed_at or job.timed_out_at
    spec = job.payload.get(TASK_KEY) if is_task_job(job) else None
    result = TaskResult(
        task=task_of(job) if spec is not None or task is None else task,
        id=str(job.id),
        status=status,
        enqueued_at=job.created_at,
        started_at=job.started_at,
        finished_at=finished_at,
        last_attempted_at=job.started_at,
        args=job.payload.get("args", []) if spec is not None else [],
        kwargs=job.payload.get("kwargs", {}) if spec is not None else {},
        backend=spec.get("backend", "default") if spec is not None else task.backend,
        errors=_errors(job, attempts),
        # Hammerweb counts attempts but does not record who made each one.
        worker_ids=[f"attempt-{n}" for n in range(1, job.attempts + 1)],
    )
    if status == TaskResultStatus.SUCCESSFUL:
        object.__setattr__(result, "_return_value", job.result)
    return result


def _errors(job, attempts) -> list[TaskError]:
    if attempts:
        return [attempt_error(row) for row in attempts]
    return [parse_error(job.error_message)] if job.error_message else []
