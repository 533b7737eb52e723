"""`manage.py measurehistory --fill 200000`: the history page's reads during an incident, before
and after the failed attempts' per-minute counters (queues.store.counters.attempt_counts, issue
#16).

`--fill N` adds N failed attempts in the last hour (to the newest jobs of the table, as many
per job as it takes), with plain multi-row INSERTs: the counters' triggers run as they do
for the engine's writes. Then, interleaved `--repeat` times: the 1 h and 24 h windows read
as before (failures and retries aggregated from `FailedAttempt`, the query the history ran
up to migration 0016) and as now (from `AttemptCount`), each read's SQL time (Django's
timing of its statements) and the main statement's plan with its actual times (EXPLAIN
ANALYZE on PostgreSQL, ANALYZE on MariaDB)."""

from __future__ import annotations

import os
import random
import statistics
import time
from collections import defaultdict
from datetime import UTC, timedelta
from unittest import mock

from django.core.management.base import BaseCommand, CommandParser
from django.db import connection, transaction
from django.db.models import Count, Sum
from django.db.models.functions import Trunc
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from hammerweb.measure.management.commands.filljobs import ERRORS, _RowWriter
from queues.enums import FAILURE_STATUSES, JobStatus
from queues.models import AttemptCount, FailedAttempt, Job
from queues.reads import trends
from queues.store.counters import rollup

CHUNK = 5_000


def failed_attempts(first, end, kind: str, using: str = "default"):
    """The error history's aggregate that `rollup.raw_counts` ran before the counters."""
    return (
        FailedAttempt.objects.using(using)
        .filter(failed_at__gte=first, failed_at__lt=end)
        .annotate(bucket=Trunc("failed_at", kind, tzinfo=UTC))
        .order_by()
        .values_list("job__queue_name", "bucket", "status")
        .annotate(n=Count("id"))
    )


def raw_counts_before(first, end, kind: str, using: str = "default"):
    """`rollup.raw_counts` as it was: completions from the counters, the rest from the rows."""
    result = defaultdict(lambda: [0, 0, 0])
    for (queue, bucket), (done, _, _) in _raw_counts_now(first, end, kind, using).items():
        result[queue, bucket][0] += done
    for queue, bucket, status, n in failed_attempts(first, end, kind, using):
        if status in FAILURE_STATUSES:
            result[queue, bucket.astimezone(UTC)][1] += n
        elif status in rollup.RETRIED_STATUSES:
            result[queue, bucket.astimezone(UTC)][2] += n
    return dict(result)


_raw_counts_now = rollup.raw_counts


class Command(BaseCommand):
    help = "Time the history's 1 h and 24 h reads, from the error history and from the counters."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--fill", type=int, default=0, help="add this many failed attempts")
        parser.add_argument("--repeat", type=int, default=5)
        parser.add_argument("--seed", type=int, default=1)

    def handle(self, *args, fill: int, repeat: int, seed: int, **options) -> None:
        if fill:
            self._fill(fill, random.Random(seed))
        now = timezone.now()
        rollup.roll_up(now)  # as the pruner leaves it: the closed hours rolled up
        self.stdout.write(
            f"{connection.vendor}: {FailedAttempt.objects.count():,} failed attempts, "
            f"{Job.objects.count():,} jobs; load average {os.getloadavg()[0]:.2f}"
        )
        timings = defaultdict(list)
        for _ in range(repeat):
            for key in ("1h", "24h"):
                for label, raw in (("before", raw_counts_before), ("after", _raw_counts_now)):
                    with mock.patch.object(rollup, "raw_counts", raw):
                        timings[key, label].append(self._read(trends.WINDOWS[key], now))
        self.stdout.write("window  read    statements  sql ms (median, max)  request ms (median)")
        for (key, label), runs in timings.items():
            sql = [r[1] for r in runs]
            self.stdout.write(
                f"{key:<7} {label:<7} {runs[0][0]:>10}  {statistics.median(sql):8.1f} "
                f"{max(sql):8.1f}  {statistics.median(r[2] for r in runs):12.1f}"
            )
        self._plans(now)

    def _read(self, window, now) -> tuple[int, float, float]:
        started = time.perf_counter()
        with CaptureQueriesContext(connection) as reads:
            trends.history(window, now)
        took = (time.perf_counter() - started) * 1000
        return len(reads), sum(float(q["time"]) for q in reads) * 1000, took

    def _plans(self, now) -> None:
        hour_end = now.replace(second=0, microsecond=0) + timedelta(minutes=1)
        first = hour_end - timedelta(hours=1)
        split = rollup.rolled_until() or first
        day_end = rollup.hour_of(now) + rollup.HOUR
        cases = [
            ("1h before (FailedAttempt, by minute)", failed_attempts(first, hour_end, "minute")),
            (
                "1h after (AttemptCount, by minute)",
                AttemptCount.objects.filter(
                    minute__gte=first, minute__lt=hour_end, status__in=rollup.COUNTED_STATUSES
                )
                .annotate(bucket=Trunc("minute", "minute", tzinfo=UTC))
                .order_by()
                .values_list("queue_name", "bucket", "status")
                .annotate(n=Sum("n")),
            ),
            (
                "24h before (FailedAttempt, the hour not rolled)",
                failed_attempts(split, day_end, "hour"),
            ),
        ]
        # SQLite's EXPLAIN QUERY PLAN runs nothing: it takes no options.
        analyze = {} if connection.vendor == "sqlite" else {"analyze": True}
        for title, query in cases:
            self.stdout.write(f"\n-- {title}")
            self.stdout.write(query.explain(**analyze))

    def _fill(self, count: int, rng: random.Random) -> None:
        now = timezone.now()
        jobs = list(Job.objects.order_by("-created_at").values_list("id", flat=True)[:20_000])
        writer = _RowWriter(FailedAttempt, skip=("id",))
        started, done = time.monotonic(), 0
        while done < count:
            size = min(CHUNK, count - done)
            rows = [
                writer.row(
                    {
                        "job_id": rng.choice(jobs),
                        "attempt": rng.randint(1, 3),
                        "failed_at": now - timedelta(seconds=3600 * rng.random()),
                        "ended_by": "error",
                        "status": rng.choices(
                            [JobStatus.PENDING, JobStatus.DEAD, JobStatus.FAILED], [70, 20, 10]
                        )[0],
                        "error": rng.choice(ERRORS),
                    }
                )
                for _ in range(size)
            ]
            with transaction.atomic(), connection.cursor() as cursor:
                writer.write(cursor, rows)
            done += size
        rate = done / (time.monotonic() - started)
        self.stdout.write(f"inserted {done:,} failed attempts ({rate:,.0f}/s, triggers on)")
