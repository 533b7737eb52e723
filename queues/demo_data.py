"""Sample jobs for `manage.py demo`: several queues with a history of completed, failed and
dead runs, recurring jobs, a batch and a workflow, all written through `JobQueue`."""

from __future__ import annotations

import math
import random
from datetime import timedelta

from .api import (
    DequeueOptions,
    Job,
    JobBatch,
    JobGroup,
    JobOutcome,
    JobPriority,
    JobQueue,
    MockClock,
)

HISTORY_MINUTES = 28

QUEUES = ["emails", "webhooks", "reports", "images", "billing"]
TEMPLATES = ["welcome", "password-reset", "invoice", "weekly-digest", "order-shipped"]
HOOK_ERRORS = [
    "HTTP 503 from https://hooks.example.com/orders",
    "ConnectTimeout: hooks.partner.example:443 did not answer in 10 s",
    "HTTP 410 Gone: endpoint removed by the customer",
]


def email(rng: random.Random, **fields) -> Job:
    n = rng.randrange(10_000)
    priority = rng.choice([JobPriority.NORMAL] * 4 + [JobPriority.HIGH, JobPriority.LOW])
    return Job(
        queue_name="emails",
        payload={"to": f"customer{n}@example.com", "template": rng.choice(TEMPLATES),
                 "locale": rng.choice(["en", "fr", "de"])},
        **{"priority": priority, **fields},
    )


def webhook(rng: random.Random) -> Job:
    return Job(
        queue_name="webhooks",
        payload={"url": "https://hooks.example.com/orders", "event": "order.paid",
                 "order_id": rng.randrange(10**6)},
        max_attempts=5,
    )


def load(queue: JobQueue, rng: random.Random | None = None) -> dict[str, int]:
    """Write the sample jobs; returns how many jobs and queues."""
    rng = rng or random.Random(7)
    _history(queue, rng)
    queue.enqueue_many([email(rng) for _ in range(25)])
    queue.enqueue_many([webhook(rng) for _ in range(10)])
    # Scheduled for later, and urgent.
    later = email(rng)
    later.scheduled_at = later.created_at + timedelta(hours=2)
    queue.enqueue_many([later, email(rng, priority=JobPriority.CRITICAL)])
    # Recurring reports, one of them disabled.
    cron = [
        Job(queue_name="reports", payload={"report": "sales-summary"},
            cron_schedule="0 * * * * *", timezone="UTC"),
        Job(queue_name="reports", payload={"report": "daily-kpis", "to": "ops@example.com"},
            cron_schedule="0 0 6 * * *", timezone="Europe/Paris"),
        Job(queue_name="reports", payload={"report": "quarterly-audit"},
            cron_schedule="0 0 0 1 */3 *", timezone="America/New_York"),
    ]
    queue.enqueue_many(cron)
    queue.disable_recurring_job(cron[2].id)
    # A batch of thumbnails and a workflow of billing steps.
    album = [Job(queue_name="images", payload={"album": 42, "photo": f"IMG_{i:04}.jpg",
                                               "sizes": [128, 512]}) for i in range(24)]
    queue.enqueue_batch(JobBatch("album 42 thumbnails", jobs=album, metadata={"album": "42"}))
    charge = Job(queue_name="billing", payload={"step": "charge", "invoice": 1001})
    receipt = Job(queue_name="billing", payload={"step": "receipt", "invoice": 1001})
    ledger = Job(queue_name="billing", payload={"step": "ledger", "invoice": 1001})
    group = JobGroup("invoice 1001").add_job(charge)
    group.then(receipt).then(ledger)
    queue.enqueue_workflow(group)
    return {"jobs": Job.objects.using(queue.using).count(), "queues": len(QUEUES)}


def _history(queue: JobQueue, rng: random.Random) -> None:
    """Half an hour of past runs, on a clock moved back: emails that completed (at a rate
    that rises and falls), webhooks that sometimes failed, retried, or went dead."""
    clock = MockClock(queue.now() - timedelta(minutes=HISTORY_MINUTES))
    past = JobQueue(using=queue.using, clock=clock, rng=rng)
    for minute in range(HISTORY_MINUTES):
        waves = 4 + int(4 * math.sin(minute / 3)) + rng.randrange(3)
        past.enqueue_many([email(rng) for _ in range(waves)])
        if minute % 2 == 0:
            past.enqueue_many([webhook(rng) for _ in range(3)])
        clock.advance(timedelta(seconds=20))
        for name in ("emails", "webhooks"):
            for job in past.dequeue(name, DequeueOptions.batch(50)):
                past.finish_job_run(job, _outcome(job, rng))
        clock.advance(timedelta(seconds=40))


def _outcome(job: Job, rng: random.Random) -> JobOutcome:
    if job.queue_name == "emails":
        return JobOutcome.completed({"message_id": f"<{job.id.hex[:12]}@mx.example.com>"})
    roll = rng.random()
    if roll < 0.1:
        return JobOutcome.dead(HOOK_ERRORS[2])
    if roll < 0.35:
        return JobOutcome.failed(rng.choice(HOOK_ERRORS[:2]))
    return JobOutcome.completed({"status": 200})


def traffic(queue: JobQueue, rng: random.Random) -> None:
    """A few new jobs, as a live application would enqueue them."""
    jobs = [email(rng) for _ in range(rng.randrange(1, 4))]
    if rng.random() < 0.5:
        jobs.append(webhook(rng))
    queue.enqueue_many(jobs)
