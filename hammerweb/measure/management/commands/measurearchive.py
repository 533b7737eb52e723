"""`manage.py measurearchive --fill 1000000 --older-than 1h`: whether the claim and the pages
stay as fast once a big table's finished jobs went to the archive. Fills the jobs table
(`filljobs`, optional), times the claim and every dashboard page (`measurepages`), archives
(`jobs archive`, its rate and longest transaction), times them again, then VACUUMs the jobs
table (PostgreSQL) and times them a third time: dead tuples left by the delete, then none.
"""

from __future__ import annotations

import statistics
import time

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser
from django.db import connection

from queues.api import Job, JobOutcome, JobQueue
from queues.cli import parsing
from queues.engine.archives import Archives
from queues.models import ArchivedJob
from queues.models import Job as Row
from queues.options import DequeueOptions

CLAIM_JOBS = 1000
CLAIM_BATCH = 50


class Command(BaseCommand):
    help = "Time the claim and the pages before and after archiving a big table's jobs."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--fill", type=int, default=0, help="filljobs --count first")
        parser.add_argument("--days", type=float, default=7.0, help="filljobs --days")
        parser.add_argument("--older-than", default="1h", help="jobs archive --older-than")
        parser.add_argument("--batch-size", type=int, default=1000)
        parser.add_argument("--repeat", type=int, default=3, help="requests per page")
        parser.add_argument("--only", default="", help="measurepages --only")

    def handle(self, *args, fill, days, older_than, batch_size, repeat, only, **options):
        if fill:
            call_command("filljobs", count=fill, days=days, stdout=self.stdout)
        parsing.duration(older_than, "--older-than")
        self._measure("before", repeat, only)

        spans: list[float] = []
        original = Archives.archive_jobs

        def timed_store(queue, *a, **kw):  # each transaction, timed around the store's call
            store = queue.store
            move = store.archive_selected

            def one(*sa, **skw):
                start = time.perf_counter()
                try:
                    return move(*sa, **skw)
                finally:
                    spans.append(time.perf_counter() - start)

            store.archive_selected = one
            try:
                return original(queue, *a, **kw)
            finally:
                del store.archive_selected

        Archives.archive_jobs = timed_store
        started = time.perf_counter()
        try:
            call_command(
                "jobs", "archive", "--older-than", older_than, "--batch-size", str(batch_size),
                stdout=self.stdout, stderr=self.stderr,
            )  # fmt: skip
        finally:
            Archives.archive_jobs = original
        took = time.perf_counter() - started
        moved = ArchivedJob.objects.count()
        self.stdout.write(
            f"archive: {moved:,} jobs in the archive, {Row.objects.count():,} left; "
            f"{took:.1f} s ({moved / max(took, 1e-9):,.0f} jobs/s), {len(spans)} transactions, "
            f"median {statistics.median(spans or [0]) * 1000:.0f} ms, "
            f"longest {max(spans or [0]) * 1000:.0f} ms"
        )
        self._measure("after the archive, before VACUUM", repeat, only)
        if connection.vendor == "postgresql":
            started = time.perf_counter()
            JobQueue().vacuum_jobs()
            self.stdout.write(f"VACUUM (ANALYZE) queues_job: {time.perf_counter() - started:.1f} s")
            self._measure("after VACUUM", repeat, only)

    def _measure(self, when: str, repeat: int, only: str) -> None:
        self.stdout.write(f"\n== {when}: {Row.objects.count():,} jobs")
        self.stdout.write(_claim_line())
        call_command("measurepages", repeat=repeat, budget_ms=1e9, only=only, stdout=self.stdout)


def _claim_line() -> str:
    """The claim of `CLAIM_BATCH` jobs, `CLAIM_JOBS // CLAIM_BATCH` times, from a queue of
    fresh Pending jobs (completed after each claim, as a worker would)."""
    queue = JobQueue()
    name = f"archive-bench-{time.time_ns()}"
    queue.enqueue_many([Job(queue_name=name) for _ in range(CLAIM_JOBS)])
    times = []
    for _ in range(CLAIM_JOBS // CLAIM_BATCH):
        start = time.perf_counter()
        runs = queue.dequeue(name, DequeueOptions(batch_size=CLAIM_BATCH))
        times.append((time.perf_counter() - start) * 1000)
        queue.finish_job_runs([(run, JobOutcome.completed()) for run in runs])
    return (
        f"claim of {CLAIM_BATCH}: median {statistics.median(times):.2f} ms, "
        f"max {max(times):.2f} ms ({len(times)} claims)"
    )
