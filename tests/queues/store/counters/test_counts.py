"""The trigger-kept counts (jobs per status, completions per minute) equal COUNT(*) ...
GROUP BY, whoever changes the jobs and however many at once."""

from __future__ import annotations

import random
from collections import Counter
from datetime import timedelta

from django.db import connection
from django.db.models import Count

from queues.api import DequeueOptions, Job, JobOutcome, JobStatus
from queues.models import Job as JobRow
from queues.store.counters import completions
from queues.store.counters.counts import counts_by_queue, recount
from tests.queues.conftest import unique_queue
from tests.queues.engine.test_concurrency import in_threads


def counted(queues):
    exact = {q: dict.fromkeys(JobStatus.values, 0) for q in queues}
    rows = (
        JobRow.objects.filter(queue_name__in=queues)
        .order_by()
        .values_list("queue_name", "status")
        .annotate(n=Count("id"))
    )
    for queue, status, n in rows:
        exact[queue][status] = n
    kept = counts_by_queue()
    return exact, {q: kept.get(q, dict.fromkeys(JobStatus.values, 0)) for q in queues}


def completions_counted(queues, first, last):
    """Completed jobs per (queue, minute of completed_at), bucketed here in Python, beside
    the trigger-kept counts of the same minutes."""
    rows = JobRow.objects.filter(queue_name__in=queues, status=JobStatus.COMPLETED)
    exact = Counter(
        (queue, completions.minute_of(at))
        for queue, at in rows.values_list("queue_name", "completed_at")
    )
    kept = {
        (queue, minute): n
        for queue, per_minute in completions.per_minute(queues, first, last).items()
        for minute, n in per_minute.items()
    }
    return dict(exact), kept


def test_counts_stay_exact_under_concurrent_claims_and_outcomes(db_queue):
    queues = [unique_queue("count_a"), unique_queue("count_b")]
    for name in queues:
        db_queue.enqueue_many(
            Job(queue_name=name, payload={"i": i}, max_attempts=2) for i in range(120)
        )

    start = db_queue.now()

    def churn(seed):
        rng = random.Random(seed)
        for _ in range(40):
            # Spread the completions over minutes: every thread moves the shared clock.
            db_queue.clock.advance(timedelta(seconds=rng.randint(0, 20)))
            name = rng.choice(queues)
            batch = db_queue.dequeue(name, DequeueOptions.batch(rng.randint(1, 8)))
            finished = []
            for job in batch:
                roll = rng.random()
                if roll < 0.15:
                    db_queue.release_job_run(job)
                elif roll < 0.3:
                    db_queue.finish_job_run(job, JobOutcome.failed("x"))
                elif roll < 0.4:
                    db_queue.finish_job_run(job, JobOutcome.dead("x"))
                else:
                    finished.append((job, JobOutcome.completed()))
            db_queue.finish_job_runs(finished)
            if rng.random() < 0.2:
                db_queue.enqueue(Job(queue_name=name, payload={}))

    in_threads([lambda s=s: churn(s) for s in range(4)])
    exact, kept = counted(queues)
    assert kept == exact
    assert sum(exact[queues[0]].values()) > 120
    exact_minutes, kept_minutes = completions_counted(
        queues, completions.minute_of(start), db_queue.now()
    )
    assert kept_minutes == exact_minutes
    assert len(exact_minutes) > 10 and sum(exact_minutes.values()) > 100


def test_writes_outside_the_engine_are_counted(db_queue):
    name = unique_queue("count_orm")
    db_queue.enqueue_many(Job(queue_name=name, payload={}) for _ in range(5))
    JobRow.objects.filter(queue_name=name).update(status=JobStatus.DEAD)
    JobRow.objects.filter(id=JobRow.objects.filter(queue_name=name).first().id).delete()
    exact, kept = counted([name])
    assert kept == exact
    assert kept[name][JobStatus.DEAD] == 4


def test_recount_rebuilds_the_counts(db_queue):
    name = unique_queue("count_rebuild")
    db_queue.enqueue_many(Job(queue_name=name, payload={}) for _ in range(3))
    from queues.models import JobCount

    JobCount.objects.filter(queue_name=name).update(n=99)
    recount()
    exact, kept = counted([name])
    assert kept == exact and kept[name][JobStatus.PENDING] == 3
    connection.close()
