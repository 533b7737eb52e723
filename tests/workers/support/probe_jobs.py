"""Handlers for the `runworker --metrics-port/--health-port` tests
(`--include tests.workers.support.probe_jobs`).

A job of PROBE_QUEUE creates the file `started` if its payload names one (its handler has
started: a claimed job is Running while it waits for a slot too), sleeps `seconds` and fails
if its payload says `fail`. With
`HAMMERWEB_TEST_BREAK_WRITER=1` in its environment the process's writer dies at its first
write (a BaseException escapes it, as a bug in a C extension or a stray `sys.exit` would):
its health probe must notice.
"""

from __future__ import annotations

import os
import time

from queues.api import JobQueue
from workers.api import job_handler

PROBE_QUEUE = "probe_work"


@job_handler(PROBE_QUEUE)
def work(job):
    if job.payload.get("started"):
        open(job.payload["started"], "w").close()
    time.sleep(float(job.payload.get("seconds", 0)))
    if job.payload.get("fail"):
        raise RuntimeError("asked to fail")
    return {"ok": True}


if os.environ.get("HAMMERWEB_TEST_BREAK_WRITER") == "1":

    def _broken_write(self, finished, starting, *checks):
        raise SystemExit("the writer is gone")

    JobQueue.finish_and_start_runs = JobQueue.write_runs = _broken_write
