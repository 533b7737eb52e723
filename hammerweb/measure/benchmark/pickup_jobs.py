"""The handler of the pickup measurement's `runworker` child
(`--include hammerweb.measure.benchmark.pickup_jobs`): it does nothing; what is measured
is how soon the worker claims a job after its enqueue."""

from __future__ import annotations

from workers.api import job_handler

PICKUP_QUEUE = "bench_pickup"


@job_handler(PICKUP_QUEUE)
def nothing(job):
    return None
