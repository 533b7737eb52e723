"""What a job that runs a django.tasks task holds: the payload that names the task and its
arguments, and Django's priorities onto the five levels and the order within a level. Shared
by the tasks backend and the schedules declared in settings (which may name a task). See
docs/design/vocabulary.md."""

from __future__ import annotations

from django.tasks import Task

from queues.enums import JobPriority

#: The payload key that marks a job as a django.tasks task.
TASK_KEY = "django_task"


def job_priority(priority: int) -> JobPriority:
    """Django's -100..100 onto the five levels: 0 is Normal, +-21..60 High/Low, beyond that
    Critical/Background."""
    if priority < -60:
        return JobPriority.BACKGROUND
    if priority < -20:
        return JobPriority.LOW
    if priority <= 20:
        return JobPriority.NORMAL
    if priority <= 60:
        return JobPriority.HIGH
    return JobPriority.CRITICAL


def task_priorities(priority: int) -> dict[str, int]:
    """A job's `priority` and `task_priority` for Django's `priority`: its level, and the
    value itself as the order within the level, so that tasks run in exactly Django's order
    (a larger priority sooner) and jobs of `queues.api` (`task_priority` 0) sit between a
    level's positive and negative tasks."""
    return {"priority": job_priority(priority), "task_priority": priority}


def task_payload(task: Task, args: list, kwargs: dict) -> dict:
    """The payload of a job that runs `task` with `args` and `kwargs` (read back by
    `tasks_backend.task_of`)."""
    return {
        TASK_KEY: {
            "path": task.module_path,
            "backend": task.backend,
            "priority": task.priority,
            "takes_context": task.takes_context,
            "run_after": task.run_after.isoformat() if task.run_after else None,
        },
        "args": args,
        "kwargs": kwargs,
    }


def task_job_fields(task: Task, args: list, kwargs: dict) -> dict:
    """The fields of a job that runs `task` with `args` and `kwargs` (its queue, payload,
    priorities, and a `HammerwebTask`'s tags and meta), as the tasks backend enqueues it
    and as a batch's or workflow's callback is built. Its unique key and `run_after` are
    the backend's own."""
    fields = {
        "queue_name": task.queue_name,
        "payload": task_payload(task, args, kwargs),
        **task_priorities(task.priority),
    }
    if hasattr(task, "tags"):  # a HammerwebTask (`tasks_backend`, which imports this module)
        fields.update(tags=task.tags, meta=task.meta)
    return fields
