"""Handlers for the queues of `manage.py demo` (loaded with `runworker --include
workers.demo_jobs`): they sleep a little, and some fail, as real jobs do."""

from __future__ import annotations

import random
import time

from .executor import JobError
from .registry import job_handler

_rng = random.Random()


def _work(low: float, high: float) -> None:
    time.sleep(_rng.uniform(low, high))


@job_handler("emails")
def send_email(job):
    _work(0.05, 0.3)
    if _rng.random() < 0.03:
        raise JobError("SMTPServerDisconnected: Connection unexpectedly closed")
    return {"message_id": f"<{job.id.hex[:12]}@mx.example.com>"}


@job_handler("webhooks")
def post_webhook(job):
    _work(0.05, 0.5)
    if _rng.random() < 0.25:
        raise JobError("HTTP 503 from https://hooks.example.com/orders")
    return {"status": 200}


@job_handler("reports")
def build_report(job):
    _work(0.5, 1.5)
    return {"rows": _rng.randrange(100, 5000)}


@job_handler("images")
def make_thumbnails(job):
    _work(0.1, 0.4)
    return {"thumbnails": job.payload.get("sizes", [])}


@job_handler("billing")
def billing_step(job):
    _work(0.1, 0.3)
    return {"step": job.payload.get("step"), "ok": True}
