"""Exact job counts per queue and status (`JobCount`), cheap on any table: database triggers
(`install_job_counts` in each vendor's catalogue) keep them in the same transaction as every
change of a job's status, so reading every queue's counts is a scan of a few rows, never of
the jobs table. See docs/design/counters.md."""

from __future__ import annotations

from collections import defaultdict

from django.db import connections, transaction
from django.db.models import Sum

from queues.enums import JobStatus
from queues.models import Job, JobCount
from queues.store.catalogue import run


def _run(connection, name: str) -> None:
    run(connection, name)


def install_job_counts(connection) -> None:
    """Install the triggers and count the jobs already there (inside a migration)."""
    _run(connection, "drop_job_counts")
    _run(connection, "install_job_counts")
    _run(connection, "recount_jobs")


def drop_job_counts(connection) -> None:
    _run(connection, "drop_job_counts")


def recount(using: str = "default") -> None:
    """Rebuild the counts from the jobs table. Writers must be stopped: a status change
    committed while this runs could be counted twice."""
    with transaction.atomic(using=using):
        _run(connections[using], "recount_jobs")


def clear_after_flush(using: str = "default", **kwargs) -> None:
    """After a flush (tests) the jobs table is empty while the counts may not be: tables are
    emptied in no fixed order, and deleting jobs after their counts leaves negatives."""
    if not Job.objects.using(using).exists():
        JobCount.objects.using(using).all().delete()


def counts_by_queue(using: str = "default", queue_name: str | None = None):
    """{queue: {status: count}} for every queue with jobs (or just `queue_name`)."""
    rows = JobCount.objects.using(using).order_by()
    if queue_name is not None:
        rows = rows.filter(queue_name=queue_name)
    result: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(JobStatus.values, 0))
    for queue, status, n in rows.values_list("queue_name", "status").annotate(total=Sum("n")):
        if n:
            result[queue][status] = n
    return {queue: counts for queue, counts in result.items() if any(counts.values())}
