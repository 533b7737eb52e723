"""`manage.py measurebulk --jobs 100000 --before-jobs 3000`: a dashboard's "Retry all N
matching" (`BulkOperation`) run by `BulkRunner.run_once` in a loop, before and after
`JobQueue.retry_jobs`, interleaved in the same process so that both see the same load.

Two queues are filled with Dead jobs (`bulk_create`, the count triggers firing): the "after"
one (`--jobs`) is retried by the engine as it is (`retry_jobs`: a page in a few statements),
the "before" one (`--before-jobs`, fewer: it is ~100 times slower) by a queue whose
`retry_jobs` is the loop that `acting.act_on_page` ran before, `retry_job` per job (a
savepoint, a lock and its writes each). Each pass of a runner works `--budget` seconds on its
own operation; passes alternate until both operations are done. Prints jobs/s of each path,
the statements of a page, and the load averages at the start and the end.
"""

from __future__ import annotations

import os
import time
from datetime import timedelta

from django.core.management.base import BaseCommand, CommandParser
from django.db import connection
from django.utils import timezone

from queues.engine import transitions
from queues.engine.operators import JobsActed
from queues.engine.queue import JobQueue
from queues.enums import JobStatus
from queues.exceptions import InvalidJobTransition
from queues.models import BulkOperation, Job
from queues.ops import bulk
from queues.ops.bulk import BulkRunner
from queues.reads.search import SearchFilter
from queues.store import Match


class OneByOne(JobQueue):
    """The engine before `retry_jobs`: `retry_job` for each job of the page."""

    def retry_jobs(self, job_ids, at=None, where=None) -> JobsActed:
        result = JobsActed()
        locked = self.store.lock_jobs(Match(ids=list(job_ids)))
        for job in sorted(locked, key=lambda job: str(job.id)):
            if transitions.refusal(transitions.RETRY, job) or (where and not where(job)):
                result.kept.append(job.id)
                continue
            try:
                self.retry_job(job.id, at)
            except InvalidJobTransition:
                result.refused.append(job.id)
            else:
                result.done.append(job.id)
        return result


def _fill(name: str, count: int) -> None:
    now = timezone.now()
    Job.objects.filter(queue_name=name).delete()
    for start in range(0, count, 5000):
        rows = [
            Job(queue_name=name, status=JobStatus.DEAD, attempts=3, max_attempts=3,
                failed_at=now, error_message="boom", scheduled_at=now, payload={"n": n})
            for n in range(start, min(start + 5000, count))
        ]  # fmt: skip
        Job.objects.bulk_create(rows, batch_size=1000)


class Path:
    def __init__(self, label: str, queue: JobQueue, name: str, count: int, budget) -> None:
        self.label, self.name, self.count = label, name, count
        _fill(name, count)
        flt = SearchFilter(queue=name, status=JobStatus.DEAD.value)
        self.op = bulk.start(flt, "retry", f"measurebulk-{label}")
        self.runner = BulkRunner(queue, budget=budget, ran_by=f"measurebulk-{label}")
        self.done, self.wall, self.statements, self.pages = 0, 0.0, 0, 0

    @property
    def finished(self) -> bool:
        return self.op.status != BulkOperation.Status.RUNNING and self.op.finished_at is not None

    def one_pass(self) -> None:
        before = BulkOperation.objects.get(pk=self.op.pk).done
        counted = [0]

        def count(execute, sql, params, many, context):
            counted[0] += 1
            return execute(sql, params, many, context)

        start = time.perf_counter()
        with connection.execute_wrapper(count):
            op = self.runner.run_once()
        self.wall += time.perf_counter() - start
        assert op is not None and op.pk == self.op.pk, (op, self.op)
        self.op = op
        self.done += op.done - before
        self.pages += -(-(op.done - before) // 1000)
        self.statements += counted[0]

    def line(self) -> str:
        rate = self.done / self.wall if self.wall else 0.0
        per_page = self.statements / self.pages if self.pages else 0
        return (
            f"{self.label:6}: {self.done:,} of {self.count:,} retried in {self.wall:.1f} s of "
            f"passes: {rate:,.0f} jobs/s; {self.pages} pages, {per_page:.1f} statements a page "
            f"(each pass's claim and reads included)"
        )


class Command(BaseCommand):
    help = "Time a BulkOperation retry of Dead jobs, before and after JobQueue.retry_jobs."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--jobs", type=int, default=100_000)
        parser.add_argument("--before-jobs", type=int, default=3_000)
        parser.add_argument("--budget", type=float, default=5.0, help="seconds a pass")

    def handle(self, *args, jobs: int, before_jobs: int, budget: float, **options) -> None:
        BulkOperation.objects.filter(created_by__startswith="measurebulk-").delete()
        seconds = timedelta(seconds=budget)
        load = os.getloadavg()
        paths = [
            Path("before", OneByOne(), "measurebulk_before", before_jobs, seconds),
            Path("after", JobQueue(), "measurebulk_after", jobs, seconds),
        ]
        self.stdout.write(f"{connection.vendor}, load average at the start {load}")
        while not all(path.finished for path in paths):
            for path in paths:
                if not path.finished:
                    path.one_pass()
        for path in paths:
            left = Job.objects.filter(queue_name=path.name).exclude(status=JobStatus.PENDING)
            self.stdout.write(path.line() + f"; {left.count()} not Pending")
        self.stdout.write(f"load average at the end {os.getloadavg()}")
