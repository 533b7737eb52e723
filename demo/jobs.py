"""Sample handlers for `make demo`. They register where the demo app is installed, that is
with HAMMERWEB_DEMO=1: `HAMMERWEB_DEMO=1 manage.py runworker emails reports flaky slow` runs them.

Each handler gets the claimed `Job`; what it returns is stored as the job's result, what it
raises fails the run (retried with backoff while attempts remain).
"""

from __future__ import annotations

import asyncio
import random
import time

from workers.api import JobError, job_handler

#: Queues that have a demo handler, for `make demo` and the dashboard's sample jobs.
DEMO_QUEUES = ("emails", "reports", "flaky", "slow")


@job_handler("emails")
def send_email(job):
    """Pretends to send an email to `payload["to"]`."""
    to = job.payload.get("to")
    if not to or "@" not in str(to):
        raise JobError(f"cannot send to {to!r}: not an email address")
    time.sleep(random.uniform(0.01, 0.05))
    return {"sent_to": to}


@job_handler("reports")
async def build_report(job):
    """An async handler: 'builds' a report of `payload["rows"]` rows."""
    rows = int(job.payload.get("rows", 100))
    await asyncio.sleep(min(rows, 10_000) / 100_000)
    return {"rows": rows, "pages": max(1, rows // 50)}


@job_handler("flaky")
def flaky(job):
    """Fails a share of its runs (`payload["failure_rate"]`, default 0.3)."""
    rate = float(job.payload.get("failure_rate", 0.3))
    if random.random() < rate:
        raise RuntimeError(f"flaky failure on attempt {job.attempts}")
    return {"attempt": job.attempts}


@job_handler("slow")
def slow(job):
    """Sleeps `payload["seconds"]` (default 2) seconds."""
    seconds = float(job.payload.get("seconds", 2))
    time.sleep(seconds)
    return {"slept": seconds}
