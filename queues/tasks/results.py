"""A django.tasks `TaskResult` read from a task's job and its error history: the status,
the times and the workers of its attempts, its errors and return value. The backend
(`queues.tasks_backend`) reads results with it, and the worker builds the result of each
task it runs. Models are imported inside the functions, as in the backend. See
docs/design/vocabulary.md."""

from __future__ import annotations

from datetime import datetime

from django.tasks import Task
from django.tasks.base import TaskError, TaskResult, TaskResultStatus
from django.utils.module_loading import import_string

from queues.enums import JobStatus
from queues.tasks.jobs import TASK_KEY

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
#: The id given for an attempt whose claim named no worker process (a `Worker` run in
#: the caller's own process, not by runworker).
UNKNOWN_WORKER = "unknown"


class TaskRunError(Exception):
    """The class given for a failure that was not an exception of the task itself (lease
    expired, timed out, its fail-fast batch failed)."""


#: Its path as results give it: the backend's module, where users import it from.
_RUN_ERROR = "queues.tasks_backend.TaskRunError"


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
    return TaskError(exception_class_path=_RUN_ERROR, traceback=row.error or "")


def parse_error(text: str) -> TaskError:
    head, sep, traceback = text.partition("\n\n")
    path = head.split(":", 1)[0].strip()
    if sep and path and " " not in path and "." in path:
        return TaskError(exception_class_path=path, traceback=traceback)
    return TaskError(exception_class_path=_RUN_ERROR, traceback=text)


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


def read_attempts(job, task: Task) -> list:
    """The job's error history, oldest first, from the database of `task`'s backend."""
    from queues.models import FailedAttempt

    using = getattr(task.get_backend(), "using", "default")
    return list(FailedAttempt.objects.using(using).filter(job_id=job.id).order_by("id"))


def running_result(job, task: Task | None = None) -> TaskResult:
    """The result of a task's job as the worker starts a run of it. Its error history is
    read only if an earlier attempt may have left one: a first attempt costs no read, and
    its result is built from the row alone, with `task` (the job's `task_of`, which the
    caller may have made already); a later attempt's goes through `result_from_job`."""
    retried = job.attempts > 1 or job.error_message is not None
    if retried or job.status != JobStatus.RUNNING:
        return result_from_job(job, attempts=None if retried else [])
    # What `result_from_job` gives a first attempt that runs, without its general steps:
    # the worker builds one for every task it runs.
    payload = job.payload
    started = job.started_at
    claimed_by = job.claimed_by
    return TaskResult(
        task=task_of(job) if task is None else task,
        id=str(job.id),
        status=TaskResultStatus.RUNNING,
        enqueued_at=job.created_at,
        started_at=started,
        finished_at=None,
        last_attempted_at=started,
        args=payload.get("args", []),
        kwargs=payload.get("kwargs", {}),
        backend=payload[TASK_KEY].get("backend", "default"),
        errors=[],
        worker_ids=[str(claimed_by) if claimed_by is not None else UNKNOWN_WORKER],
    )


def result_from_job(job, task: Task | None = None, attempts=None) -> TaskResult:
    """The `TaskResult` of a task's job, as it stands in the row and its error history
    (`attempts`, oldest first; None: read here). `task`: that of a job that holds the
    unique key a task was enqueued with, whatever the job runs.

    Django's definitions, through retries: each attempt that ran is a failed one, which the
    history records with its start and its worker process, or the latest, which runs or
    completed (the job's `started_at` and `claimed_by`). `worker_ids` has one id per
    attempt, `started_at` is the first attempt's start and `last_attempted_at` the
    latest's (a retry that waits keeps it), `finished_at` is set once the task finished."""
    status = _STATUS[JobStatus(job.status)]
    if job.status == JobStatus.ARCHIVED and job.completed_at is None:
        status = TaskResultStatus.FAILED
    finished_at = None
    if status == TaskResultStatus.SUCCESSFUL:
        finished_at = job.completed_at
    elif status == TaskResultStatus.FAILED:
        finished_at = job.failed_at or job.timed_out_at
    spec = job.payload.get(TASK_KEY) if is_task_job(job) else None
    task = task_of(job) if spec is not None or task is None else task
    if attempts is None:
        attempts = read_attempts(job, task)
    # The latest attempt has no row of its own while it runs, and once it completed.
    latest = status in (TaskResultStatus.RUNNING, TaskResultStatus.SUCCESSFUL)
    workers = [row.worker_process for row in attempts] + ([job.claimed_by] if latest else [])
    starts = [row.started_at for row in attempts if row.started_at is not None]
    last_start = job.started_at or (attempts[-1].started_at if attempts else None)
    result = TaskResult(
        task=task,
        id=str(job.id),
        status=status,
        enqueued_at=job.created_at,
        started_at=starts[0] if starts else job.started_at,
        finished_at=finished_at,
        last_attempted_at=last_start,
        args=job.payload.get("args", []) if spec is not None else [],
        kwargs=job.payload.get("kwargs", {}) if spec is not None else {},
        backend=spec.get("backend", "default") if spec is not None else task.backend,
        errors=_errors(job, attempts),
        worker_ids=[str(w) if w is not None else UNKNOWN_WORKER for w in workers],
    )
    if status == TaskResultStatus.SUCCESSFUL:
        object.__setattr__(result, "_return_value", job.result)
    return result


def _errors(job, attempts) -> list[TaskError]:
    if attempts:
        return [attempt_error(row) for row in attempts]
    return [parse_error(job.error_message)] if job.error_message else []
