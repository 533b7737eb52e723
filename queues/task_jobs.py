"""What a job that runs a django.tasks task holds: the payload that names the task and its
arguments, and Django's priorities onto the five levels. Shared by the tasks backend and the
schedules declared in settings (which may name a task). See docs/design/vocabulary.md."""

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
