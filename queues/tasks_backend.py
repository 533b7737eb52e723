"""The django.tasks backend (`TASKS = {"default": {"BACKEND":
"queues.tasks_backend.HammerwebBackend"}}`): functions decorated with Django's `@task` become
jobs, run by `manage.py runworker` (`workers.tasks`), and their results are read back from
the jobs table, from any process. Models are imported inside the methods: the backend may be
built before the app registry is ready. See docs/design/vocabulary.md."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from datetime import timedelta

from django.tasks import Task
from django.tasks.backends.base import BaseTaskBackend
from django.tasks.base import TaskResult, TaskResultStatus
from django.tasks.exceptions import TaskResultDoesNotExist
from django.tasks.signals import task_enqueued

from queues.tasks.jobs import TASK_KEY, task_job_fields
from queues.tasks.results import TaskRunError, is_task_job, result_from_job, task_of

# The names of the results' side stay importable from here, where they were first.
__all__ = [
    "TASK_KEY",
    "HammerwebBackend",
    "HammerwebTask",
    "TaskRunError",
    "is_task_job",
    "result_from_job",
    "task_of",
]


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
    #: Its tasks are Hammerweb jobs: a callback of a batch or workflow may be one.
    enqueues_jobs = True

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
        own = task.unique_fields(args, kwargs) if isinstance(task, HammerwebTask) else {}
        job = Job(
            id=uuid.UUID(result.id),
            **task_job_fields(task, result.args, result.kwargs),
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
