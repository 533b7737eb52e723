"""Sample jobs for `manage.py demo`, on the queues that this app has handlers for
(`jobs.py`): half an hour of history (completed, failed, retried and dead runs), jobs
waiting now, recurring reports, a batch and a workflow, all written through `JobQueue`."""

from __future__ import annotations

import math
import random
from datetime import timedelta

from queues.api import (
    DequeueOptions,
    Job,
    JobBatch,
    JobGroup,
    JobOutcome,
    JobPriority,
    JobQueue,
    MockClock,
)
from queues.models import Job as JobRow

HISTORY_MINUTES = 28
QUEUES = ["emails", "reports", "flaky", "slow"]
TEMPLATES = ["welcome", "password-reset", "invoice", "weekly-digest", "order-shipped"]
FLAKY_ERRORS = [
    "HTTP 503 from https://hooks.example.com/orders",
    "ConnectTimeout: hooks.partner.example:443 did not answer in 10 s",
    "HTTP 410 Gone: endpoint removed by the customer",
]


def email(rng: random.Random, **fields) -> Job:
    n = rng.randrange(10_000)
    priority = rng.choice([JobPriority.NORMAL] * 4 + [JobPriority.HIGH, JobPriority.LOW])
    payload = {
        "to": f"customer{n}@example.com",
        "template": rng.choice(TEMPLATES),
        "locale": rng.choice(["en", "fr", "de"]),
    }
    return Job(queue_name="emails", **{"payload": payload, "priority": priority, **fields})


def webhook(rng: random.Random) -> Job:
    """A delivery to a partner's endpoint that fails now and then (the `flaky` handler)."""
    return Job(
        queue_name="flaky",
        payload={
            "url": "https://hooks.example.com/orders",
            "event": "order.paid",
            "order_id": rng.randrange(10**6),
            "failure_rate": 0.3,
        },
        max_attempts=5,
    )


def report(name: str, **payload) -> Job:
    return Job(queue_name="reports", payload={"report": name, "rows": 2_000, **payload})


def load(queue: JobQueue, rng: random.Random | None = None) -> dict[str, int]:
    """Write the sample jobs; returns how many jobs and queues there are."""
    rng = rng or random.Random(7)
    _history(queue, rng)
    queue.enqueue_many([email(rng) for _ in range(25)] + [webhook(rng) for _ in range(10)])
    # Scheduled for later, urgent, and slow.
    later = email(rng)
    later.scheduled_at = later.created_at + timedelta(hours=2)
    slow = [Job(queue_name="slow", payload={"seconds": s}) for s in (2, 3, 5)]
    queue.enqueue_many([later, email(rng, priority=JobPriority.CRITICAL), *slow])
    # Recurring reports (cron with seconds first), one of them disabled.
    cron = [
        Job(
            queue_name="reports",
            payload={"report": "sales-summary", "rows": 500},
            cron_schedule="0 * * * * *",
            timezone="UTC",
        ),
        Job(
            queue_name="reports",
            payload={"report": "daily-kpis", "rows": 5_000},
            cron_schedule="0 0 6 * * *",
            timezone="Europe/Paris",
        ),
        Job(
            queue_name="reports",
            payload={"report": "quarterly-audit", "rows": 9_000},
            cron_schedule="0 0 0 1 */3 *",
            timezone="America/New_York",
        ),
    ]
    queue.enqueue_many(cron)
    queue.disable_recurring_job(cron[2].id)
    # A newsletter sent as one batch, and a month-end workflow of reports.
    newsletter = [
        email(rng, payload={"to": f"reader{i}@example.com", "template": "newsletter"})
        for i in range(24)
    ]
    queue.enqueue_batch(
        JobBatch("November newsletter", jobs=newsletter, metadata={"campaign": "2026-11"})
    )
    extract, summary, mail = report("ledger-extract"), report("month-end"), report("mail-cfo")
    queue.enqueue_workflow(JobGroup("month-end close").add_job(extract).then(summary).then(mail))
    return {"jobs": JobRow.objects.using(queue.using).count(), "queues": len(QUEUES)}


def _history(queue: JobQueue, rng: random.Random) -> None:
    """Half an hour of past runs, on a clock moved back: emails that completed (at a rate
    that rises and falls), webhooks that sometimes failed, retried, or went dead."""
    start = queue.now() - timedelta(minutes=HISTORY_MINUTES)
    clock = MockClock(start)
    past = JobQueue(using=queue.using, clock=clock, rng=rng)
    for minute in range(HISTORY_MINUTES):
        clock.set(start + timedelta(minutes=minute))
        waves = 4 + int(4 * math.sin(minute / 3)) + rng.randrange(3)
        past.enqueue_many([email(rng) for _ in range(waves)])
        if minute % 2 == 0:
            past.enqueue_many([webhook(rng) for _ in range(3)])
        clock.advance(timedelta(seconds=20))
        for name in ("emails", "flaky"):
            for job in past.dequeue(name, DequeueOptions.batch(50)):
                clock.advance(timedelta(milliseconds=rng.randrange(20, 400)))  # it ran
                past.finish_job_run(job, _outcome(job, rng))


def _outcome(job: Job, rng: random.Random) -> JobOutcome:
    if job.queue_name == "emails":
        return JobOutcome.completed({"sent_to": job.payload["to"]})
    roll = rng.random()
    if roll < 0.1:
        return JobOutcome.dead(FLAKY_ERRORS[2])
    if roll < 0.35:
        return JobOutcome.failed(rng.choice(FLAKY_ERRORS[:2]))
    return JobOutcome.completed({"status": 200})


def traffic(queue: JobQueue, rng: random.Random) -> None:
    """A few new jobs, as a live application would enqueue them."""
    jobs = [email(rng) for _ in range(rng.randrange(1, 4))]
    if rng.random() < 0.5:
        jobs.append(webhook(rng))
    queue.enqueue_many(jobs)
