"""`manage.py measurepurge --older-than 7d`: time `manage.py jobs purge` on the current
database (fill it first with `filljobs`): the whole run, each of its transactions (each call
of `JobQueue.delete_jobs`, timed around the engine's method), the statements, and the peak
memory of the process (`resource.getrusage`, before the purge and after).
"""

from __future__ import annotations

import resource
import sys
import time

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser
from django.db import connection

from queues.engine.queue import JobQueue
from queues.models import Job


def _peak_mb() -> float:
    # Kilobytes on Linux, bytes on macOS.
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024 if sys.platform == "darwin" else 1024)


class Command(BaseCommand):
    help = "Time `jobs purge --older-than DURATION`: total, longest transaction, peak memory."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--older-than", default="7d")
        parser.add_argument("--batch-size", type=int, default=1000)

    def handle(self, *args, older_than: str, batch_size: int, **options) -> None:
        before_rows = Job.objects.count()
        Job.objects.filter(id__isnull=True).first()  # connect and warm up before the baseline
        baseline = _peak_mb()
        spans: list[float] = []
        statements = [0]
        original = JobQueue.delete_jobs

        def timed(queue, *args, **kwargs):
            start = time.perf_counter()
            try:
                return original(queue, *args, **kwargs)
            finally:
                spans.append(time.perf_counter() - start)

        def counted(execute, sql, params, many, context):
            statements[0] += 1
            return execute(sql, params, many, context)

        JobQueue.delete_jobs = timed
        started = time.perf_counter()
        cpu = time.process_time()
        try:
            with connection.execute_wrapper(counted):
                call_command(
                    "jobs",
                    "purge",
                    "--older-than",
                    older_than,
                    "--yes",
                    "--batch-size",
                    str(batch_size),
                    stdout=self.stdout,
                    stderr=self.stderr,
                )
        finally:
            JobQueue.delete_jobs = original
        total = time.perf_counter() - started
        cpu = time.process_time() - cpu
        after_rows = Job.objects.count()
        spans.sort()
        median = spans[len(spans) // 2] if spans else 0.0
        self.stdout.write(
            f"{connection.vendor}: {before_rows:,} -> {after_rows:,} jobs; purged "
            f"{before_rows - after_rows:,} in {total:.1f} s "
            f"({(before_rows - after_rows) / total:,.0f}/s, this process's CPU {cpu:.1f} s); "
            f"{len(spans)} transactions, "
            f"median {median * 1000:.0f} ms, longest {max(spans, default=0) * 1000:.0f} ms; "
            f"{statements[0]:,} statements; peak memory {baseline:.0f} MB before, "
            f"{_peak_mb():.0f} MB after"
        )
