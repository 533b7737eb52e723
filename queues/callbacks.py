"""Callbacks of batches and workflows: the job a group enqueues once it succeeds, fails or
completes (`JobBatch.on_success(job)`), kept on the group's row as a JSON spec checked at
enqueue, and the job built from that spec when it is due, its payload carrying the group's
tally under `payload["group"]`. When each is due is `queues.engine.tallies.callbacks_due`.
See docs/design/vocabulary.md."""

from __future__ import annotations

import copy
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.tasks import Task
from django.tasks.exceptions import InvalidTask
from django.utils.json import normalize_json

from queues.exceptions import InvalidJob
from queues.models import Batch, Job
from queues.tasks.jobs import task_job_fields
from queues.validation import check_json, validate_job

#: The events, in the order their callbacks are enqueued when due together.
SUCCESS, FAILURE, COMPLETE = "success", "failure", "complete"
EVENTS = (SUCCESS, FAILURE, COMPLETE)
#: The payload key under which a callback job finds its group's tally.
GROUP_KEY = "group"
#: The tallies a callback's payload carries, as the group's row names them.
TALLIES = ("total_jobs", "completed_jobs", "failed_jobs")


@dataclass(frozen=True)
class Callback:
    """A callback as declared: a `Job`, or a django.tasks task with its arguments."""

    target: object
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)


def specs(
    declared: Mapping[str, Callback], now: datetime, error: type[InvalidJob], members=()
) -> dict:
    """The JSON specs of the declared callbacks ({event: spec}), each checked as a new job
    is: `error` (InvalidBatch or InvalidWorkflow) names the one that is not, or one of the
    group's own `members`."""
    for event, callback in declared.items():
        if any(callback.target is job for job in members):
            raise error(f"the on_{event} callback is a job of the group itself")
    return {event: _spec(event, callback, now, error) for event, callback in declared.items()}


def _spec(event: str, callback: Callback, now: datetime, error) -> dict:
    what = f"the on_{event} callback"
    target = callback.target
    if isinstance(target, Task):
        try:
            backend = target.get_backend()
            if not getattr(backend, "enqueues_jobs", False):  # its own backend would run it
                raise InvalidTask(f"its backend {target.backend!r} is not Hammerweb's")
            backend.validate_task(target)
            args, kwargs = normalize_json(list(callback.args)), normalize_json(callback.kwargs)
        except (InvalidTask, TypeError, ValueError) as exc:
            raise error(f"{what}: {exc}") from exc
        job = Job(**task_job_fields(target, args, kwargs))
        job.max_attempts = getattr(target.get_backend(), "max_attempts", 1)
    elif isinstance(target, Job):
        if callback.args or callback.kwargs:
            raise error(f"{what}: args and kwargs are for a task; a job has its payload")
        job = copy.copy(target)  # checked and normalised apart from the caller's
    else:
        raise error(f"{what} must be a Job or a django.tasks task, not {type(target).__name__}")
    if job.batch_id or job.workflow_id or job.depends_on:
        raise error(f"{what} cannot be in a batch or a workflow, nor wait for other jobs")
    if job.cron_schedule or job.unique_key:
        raise error(f"{what} cannot be recurring nor a unique job")
    if not isinstance(job.payload, dict) or GROUP_KEY in job.payload:
        raise error(f"{what}'s payload must be a dict without a {GROUP_KEY!r} key")
    try:
        validate_job(job, now)
    except InvalidJob as exc:
        raise error(f"{what}: {exc}") from exc
    spec = {
        "queue_name": job.queue_name,
        "payload": job.payload,
        "priority": int(job.priority),
        "task_priority": job.task_priority,
        "max_attempts": job.max_attempts,
        "timeout": job.timeout.total_seconds() if job.timeout is not None else None,
        "retry_strategy": job.retry_strategy,
        "tags": list(job.tags),
        "meta": dict(job.meta),
    }
    check_json(spec, what, error)
    return spec


def tally(group, fields: Mapping, event: str) -> dict:
    """What a callback's payload tells of its group (`group`'s row with `fields` written)."""
    values = {name: fields.get(name, getattr(group, name)) for name in TALLIES}
    return {
        "kind": "batch" if isinstance(group, Batch) else "workflow",
        "id": str(group.id),
        "name": group.name,
        "event": event,
        "status": str(fields.get("status", group.status)),
        **values,
        "pending_jobs": values["total_jobs"] - values["completed_jobs"] - values["failed_jobs"],
    }


def callback_job(spec: Mapping, tally: dict, now: datetime) -> Job:
    """The job of a callback `spec` once due: due now, with the group's tally in its payload."""
    timeout = spec.get("timeout")
    return Job(
        id=uuid.uuid4(),
        queue_name=spec["queue_name"],
        payload={**spec["payload"], GROUP_KEY: tally},
        priority=spec["priority"],
        task_priority=spec.get("task_priority", 0),
        max_attempts=spec["max_attempts"],
        timeout=timedelta(seconds=timeout) if timeout is not None else None,
        retry_strategy=spec.get("retry_strategy"),
        tags=list(spec.get("tags", [])),
        meta=dict(spec.get("meta", {})),
        created_at=now,
        scheduled_at=now,
    )
