"""Handlers and tasks for the `runworker` processes that the tests start
(`runworker ... --include tests.workers.subprocess_jobs`).

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
