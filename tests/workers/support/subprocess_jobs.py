"""Handlers and tasks for the `runworker` processes that the tests start
(`runworker ... --include tests.workers.support.subprocess_jobs`).

A job whose payload names a `log` file appends `start <id> <attempt> <pid>` when it starts
and `done <id>` when its handler returns, so a test can tell what ran where and how often.
A job whose payload names a `gate` file waits until that file exists: the test decides
when it finishes. A job whose payload has `exit` ends its process with that code, as a
segfault or the OOM killer would, without any cleanup.
"""

from __future__ import annotations

import asyncio
import os
import time

from django.tasks import task

from workers.api import job_handler

WORK_QUEUE = "sub_work"
#: The queues of the cancel tests: an async handler, a sync one that polls the request, one
#: that ignores it (give its jobs a timeout).
CANCEL_ASYNC, CANCEL_POLL, CANCEL_IGNORE = "sub_cancel_async", "sub_cancel_poll", "sub_cancel_ign"


def _log(path: str | None, line: str) -> None:
    if path:
        with open(path, "a") as f:
            f.write(line + "\n")


@job_handler(WORK_QUEUE)
def work(job):
    log = job.payload.get("log")
    _log(log, f"start {job.id} {job.attempts} {os.getpid()}")
    if "exit" in job.payload:
        os._exit(job.payload["exit"])
    gate = job.payload.get("gate")
    deadline = time.monotonic() + 120
    while gate and not os.path.exists(gate) and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(float(job.payload.get("seconds", 0)))
    _log(log, f"done {job.id}")
    return {"pid": os.getpid()}


@task(queue_name=WORK_QUEUE)
def multiply(a, b):
    return a * b


@task(queue_name=WORK_QUEUE, priority=50)
async def multiply_async(a, b):
    await asyncio.sleep(0)
    return {"product": a * b}


@task(queue_name=WORK_QUEUE)
def explode(message):
    raise ValueError(message)


# Cancels: each handler logs `start <id> <pid>`, then how it ended: `cancelled <id>` (its task
# was cancelled), `stopped <id>` (it saw the request) or `done <id>` (it ran to its end).
@job_handler(CANCEL_ASYNC)
async def sleeps_until_cancelled(job):
    log = job.payload.get("log")
    _log(log, f"start {job.id} {os.getpid()}")
    try:
        await asyncio.sleep(float(job.payload.get("seconds", 60)))
    except asyncio.CancelledError:
        _log(log, f"cancelled {job.id}")
        raise
    _log(log, f"done {job.id}")
    return {"slept": True}


@job_handler(CANCEL_POLL)
def works_until_asked(job):
    log = job.payload.get("log")
    _log(log, f"start {job.id} {os.getpid()}")
    deadline = time.monotonic() + float(job.payload.get("seconds", 60))
    while time.monotonic() < deadline:
        if job.cancel_requested():
            _log(log, f"stopped {job.id}")
            return {"stopped": True}
        time.sleep(0.01)
    _log(log, f"done {job.id}")
    return {"stopped": False}


@job_handler(CANCEL_IGNORE)
def ignores_the_request(job):
    log = job.payload.get("log")
    _log(log, f"start {job.id} {os.getpid()}")
    time.sleep(float(job.payload.get("seconds", 0)))
    _log(log, f"done {job.id}")
    return {"ignored": True}


@task(queue_name=CANCEL_POLL, takes_context=True)
def polls_its_context(context, log, seconds):
    _log(log, f"start {context.task_result.id} {os.getpid()}")
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if context.cancel_requested():
            _log(log, f"stopped {context.task_result.id}")
            return "stopped"
        time.sleep(0.01)
    _log(log, f"done {context.task_result.id}")
    return "done"
