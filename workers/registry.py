"""Handlers by queue: `@job_handler("emails")` in an installed app's `jobs.py` (found by
`autodiscover()`, like admin modules) or called in code, and `dispatch(job)`, the handler
that `runworker` gives its workers: it runs django.tasks jobs and each queue's handler."""

from __future__ import annotations

import threading
from collections.abc import Callable

from django.utils.module_loading import autodiscover_modules

from queues.api import Job
from workers.runtime.executor import JobError

_handlers: dict[str, Callable] = {}
_lock = threading.Lock()


class NoHandler(JobError, LookupError):
    pass


def job_handler(queue_name: str, *, replace: bool = False):
    """Register the decorated function (plain or async) as the handler of `queue_name`."""
    from queues.validation import validate_queue_name

    validate_queue_name(queue_name)

    def register(func: Callable) -> Callable:
        if not callable(func):
            raise TypeError("a job handler must be callable")
        with _lock:
            current = _handlers.get(queue_name)
            if current is not None and current is not func and not replace:
                raise ValueError(
                    f"queue {queue_name!r} already has a handler: {_name(current)}"
                )
            _handlers[queue_name] = func
        return func

    return register


def unregister(queue_name: str) -> None:
    with _lock:
        _handlers.pop(queue_name, None)


def handlers() -> dict[str, Callable]:
    with _lock:
        return dict(_handlers)


def handler_for(queue_name: str) -> Callable | None:
    with _lock:
        return _handlers.get(queue_name)


def autodiscover() -> None:
    """Import every installed app's `jobs` module, so that its handlers register."""
    autodiscover_modules("jobs")


def dispatch(job: Job):
    """Run `job` with what it asks for: a django.tasks task, or its queue's handler."""
    from workers.tasks import is_task_job, run_task_job

    if is_task_job(job):
        return run_task_job(job)
    handler = handler_for(job.queue_name)
    if handler is None:
        raise NoHandler(f"no handler is registered for queue {job.queue_name}")
    return handler(job)


def _name(func: Callable) -> str:
    return f"{getattr(func, '__module__', '?')}.{getattr(func, '__qualname__', func)!s}"
