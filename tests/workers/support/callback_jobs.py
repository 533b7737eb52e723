"""A handler and a task for the race of a batch's callback (`runworker ... --include
tests.workers.support.callback_jobs`): each member waits at a barrier (a directory where
every member leaves a file, until `n` are there) so that they all finish at once; the
callback, a django.tasks task, appends its group's tally to a file."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from django.tasks import task

from workers.api import job_handler

MEMBERS, CALLBACKS = "cb_race_members", "cb_race_callbacks"


@job_handler(MEMBERS)
def wait_for_every_member(job):
    barrier = Path(job.payload["barrier"])
    (barrier / str(job.id)).write_text(str(os.getpid()))
    deadline = time.monotonic() + 120
    while len(list(barrier.iterdir())) < job.payload["n"] and time.monotonic() < deadline:
        time.sleep(0.01)
    return {"pid": os.getpid()}


@task(queue_name=CALLBACKS, takes_context=True)
def note_group(context, path):
    with open(path, "a") as f:
        f.write(json.dumps(context.job.payload["group"]) + "\n")
    return {"noted": context.job.payload["group"]["id"]}
