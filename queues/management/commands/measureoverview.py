"""`manage.py measureoverview`: the overview's database time on the current database.

Only the time spent in the database is counted (every query of `stats.overview()` timed by
`connection.execute_wrapper`), not rendering: that is the cost the live dashboard's aggregator
pays once per read in each web process, and the overview page once per request. After one
warm-up, `--repeat` reads; prints the median and the slowest, the number of queries and the
slowest query of the median read, and fails when the median is over `--budget-ms`.
"""

from __future__ import annotations

import statistics
import time

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection

from queues import stats
from queues.counts import counts_by_queue


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

    def handle(self, *args, repeat: int, budget_ms: float, **options) -> None:
        jobs = sum(n for counts in counts_by_queue().values() for n in counts.values())
        reads = []
        for i in range(repeat + 1):
            timer = QueryTimer()
            with connection.execute_wrapper(timer):
                overview = stats.overview()
            if i:
                reads.append(timer)
        reads.sort(key=lambda t: t.total)
        median = reads[len(reads) // 2]
        slowest_ms, slowest_sql = max(median.queries)
        self.stdout.write(
            f"{connection.vendor}: {jobs:,} jobs in {len(overview.queues)} queues; "
            f"overview database time over {repeat} reads: "
            f"median {statistics.median(t.total for t in reads):.2f} ms, "
            f"max {reads[-1].total:.2f} ms, {len(median.queries)} queries; "
            f"slowest {slowest_ms:.2f} ms: {slowest_sql[:160]}"
        )
        if statistics.median(t.total for t in reads) > budget_ms:
            raise CommandError(f"over the {budget_ms:g} ms budget")
