"""Handlers of the batched-outcome test's `runworker` (`--include
tests.workers.support.outcome_jobs`): an async handler that reads with the ORM, one that fails its
first attempt, one that always fails. The dict, @task and ORM-writing shapes are benchqueue's
(hammerweb.measure.benchmark.shapes)."""

from __future__ import annotations

import asyncio
import uuid

from hammerweb.measure.models import BenchNote
from workers.api import job_handler

ASYNC, FLAKY, BROKEN = "out_async", "out_flaky", "out_broken"


@job_handler(ASYNC)
async def counts_notes(job):
    await asyncio.sleep(0)
    # The test's own rows (job_id = UUID(int=i)), not those the ORM-writing handler adds.
    notes = await BenchNote.objects.filter(job_id=uuid.UUID(int=job.payload["i"])).acount()
    return {"i": job.payload["i"], "notes": notes}


@job_handler(FLAKY)
def fails_once(job):
    if job.attempts == 1:
        raise ConnectionError(f"first attempt of {job.payload['i']}")
    return {"attempt": job.attempts}


@job_handler(BROKEN)
def always_fails(job):
    raise ValueError(f"broken {job.payload['i']}")
