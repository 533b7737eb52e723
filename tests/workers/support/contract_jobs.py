"""Handlers and tasks of the django.tasks contract tests, as users write them, for the
`runworker` processes they start (`--include tests.workers.support.contract_jobs`) and for
workers in the test's own process.

`raises` and `raises_async` (and the tasks `task_raises`, `task_raises_async`) raise the
exception their payload names: KeyboardInterrupt, GeneratorExit, SystemExit, or `Custom`, a
BaseException of the user's own. `fails_until` notes what its result says at each attempt
and fails until its gate file exists; `whose_process` returns the id of the worker process
that runs it (its `WorkerProcess` row, as the Workers page lists it)."""

from __future__ import annotations

import asyncio
import json
import os
import socket

from django.tasks import task

from workers.api import job_handler

RAISES, RAISES_ASYNC, TASKS = "ct_raises", "ct_raises_async", "ct_tasks"


class Custom(BaseException):  # noqa: N818 (named as a user may name it)
    """A user's own BaseException subclass."""


RAISED = {
    "KeyboardInterrupt": KeyboardInterrupt,
    "GeneratorExit": GeneratorExit,
    "SystemExit": SystemExit,
    "Custom": Custom,
}


def class_path(name: str) -> str:
    kind = RAISED[name]
    return f"{kind.__module__}.{kind.__qualname__}"


@job_handler(RAISES)
def raises(job):
    raise RAISED[job.payload["raise"]]("raised by the handler")


@job_handler(RAISES_ASYNC)
async def raises_async(job):
    await asyncio.sleep(0)
    raise RAISED[job.payload["raise"]]("raised by the handler")


@task(queue_name=TASKS)
def task_raises(name):
    raise RAISED[name]("raised by the task")


@task(queue_name=TASKS)
async def task_raises_async(name):
    await asyncio.sleep(0)
    raise RAISED[name]("raised by the task")


@task(queue_name=TASKS)
def noop():
    return "done"


@task(queue_name=TASKS)
def returns_unstorable(kind):
    """A return value that JSON cannot hold, or that no database column can."""
    return {"object": object(), "nan": float("nan"), "nul": "a\x00b"}[kind]


def this_worker_process() -> str | None:
    from queues.models import WorkerProcess

    mine = WorkerProcess.objects.filter(pid=os.getpid(), hostname=socket.gethostname())
    found = mine.values_list("id", flat=True).first()
    return str(found) if found else None


@task(queue_name=TASKS)
def whose_process():
    return this_worker_process()


@task(queue_name=TASKS, takes_context=True)
def fails_until(context, gate, log):
    result = context.task_result
    seen = {
        "attempt": context.attempt,
        "process": this_worker_process(),
        "worker_ids": result.worker_ids,
        "started_at": result.started_at.isoformat(),
        "last_attempted_at": result.last_attempted_at.isoformat(),
        "errors": len(result.errors),
    }
    with open(log, "a") as f:
        f.write(json.dumps(seen) + "\n")
    if not os.path.exists(gate):
        raise ConnectionError("the gate is closed")
    return {"attempt": context.attempt}
