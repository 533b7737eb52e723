"""The handler of the database-restart and chaos tests (`runworker ... --include
tests.workers.support.chaos_jobs`): a user's handler that does a little work and writes one row
with the ORM (a `HandlerRun`: every run is counted)."""

from __future__ import annotations

import os
import time

from tests.workers.support.handler_runs import record_run
from workers.api import job_handler

CHAOS_QUEUE = "sub_chaos"


@job_handler(CHAOS_QUEUE)
def chaos(job):
    time.sleep(float(job.payload.get("seconds", 0)))
    record_run(job)
    return {"pid": os.getpid()}
