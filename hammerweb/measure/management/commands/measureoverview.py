"""`manage.py measureoverview`: the overview's database time on the current database.

Only the time spent in the database is counted (every query of `stats.overview()` timed by
`connection.execute_wrapper`), not rendering. The page and the live dashboard's aggregator
make the same read. After one warm-up, `--repeat` reads; prints the median and the slowest,
the number of queries and the slowest query of the median read (with `-v 2`, each of its
queries), and fails when the median is over `--budget-ms`.
"""

from __future__ import annotations

import statistics
import time

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection
from django.db.models import Max

from queues.models import Job
from queues.reads import stats
from queues.store.counters.counts import counts_by_queue


class QueryTimer:
    def __init__(self) -> None:
        self.queries: list[tuple[float, str]] = []

    def __call__(self, execute, sql, params, many, context):
        start = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            self.queries.append(((time.perf_counter() - start) * 1000, sql))

    @property
    def total(self) -> float:
        return sum(ms for ms, _ in self.queries)


class Command(BaseCommand):
    help = "Time the overview's database queries (median and slowest of --repeat reads)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--repeat", type=int, default=20)
        parser.add_argument("--budget-ms", type=float, default=10.0)
        parser.add_argument(
            "--as-of-newest",
            action="store_true",
            help="read as of the newest job's creation, not now: a table filled earlier "
            "(filljobs) then has its recent minutes as busy as when it was filled",
        )

    def handle(self, *args, repeat: int, budget_ms: float, as_of_newest: bool, **options) -> None:
        jobs = sum(n for counts in counts_by_queue().values() for n in counts.values())
        now = Job.objects.aggregate(at=Max("created_at"))["at"] if as_of_newest else None
        self.stdout.write(
            f"{connection.vendor}: {jobs:,} jobs; overview database time, "
            f"{repeat} reads after one warm-up"
            + (f", as of {now:%Y-%m-%d %H:%M:%S}" if now else "")
        )
        measure(
            self.stdout,
            "overview",
            lambda: stats.overview(now),
            repeat,
            budget_ms,
            options["verbosity"],
        )


def measure(stdout, label: str, read, repeat: int, budget_ms: float, verbosity: int) -> None:
    """Time `read()`'s queries `repeat` times after one warm-up; report the median read, its
    slowest query (each query with verbosity 2) and the slowest read; fail over the budget."""
    reads = []
    for i in range(repeat + 1):
        timer = QueryTimer()
        with connection.execute_wrapper(timer):
            read()
        if i:
            reads.append(timer)
    reads.sort(key=lambda t: t.total)
    median_read = reads[len(reads) // 2]
    median = statistics.median(t.total for t in reads)
    slowest_ms, slowest_sql = max(median_read.queries)
    stdout.write(
        f"  {label}: median {median:.2f} ms, max {reads[-1].total:.2f} ms, "
        f"{len(median_read.queries)} queries; slowest {slowest_ms:.2f} ms: "
        f"{slowest_sql[:120]}"
    )
    if verbosity > 1:
        for ms, sql in median_read.queries:
            stdout.write(f"    {ms:7.2f} ms  {sql[:150]}")
    if median > budget_ms:
        raise CommandError(f"over the {budget_ms:g} ms budget: median {median:.2f} ms")
