"""The measurements of `manage.py benchqueue`, after the seed's batch_vs_single_claim_throughput:
claims one at a time and in batches, end-to-end workers with a no-op handler, enqueue one by
one and in bulk, and the raw-SQL limit of the same claim-and-complete loop."""

from __future__ import annotations

import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta

from django.db import connection, connections

from hammerweb.measure.benchmark.raw import RawLoop
from queues.api import DequeueOptions, Job, JobOutcome, JobQueue, QueueConfig


@dataclass
class Figure:
    group: str
    label: str
    jobs: int
    seconds: float
    # CPU seconds of the worker processes and of the database server, where measured
    # (cpu.py): what the figure's jobs cost, and where.
    worker_cpu: float | None = None
    server_cpu: float | None = None
    #: The statements the figure's processes sent, where counted (runworker's children).
    statements: int | None = None

    @property
    def rate(self) -> float:
        return self.jobs / self.seconds if self.seconds else 0.0

    @property
    def statements_per_100(self) -> float | None:
        if self.statements is None or not self.jobs:
            return None
        return self.statements * 100 / self.jobs

    def per_job_us(self, seconds: float | None) -> float | None:
        """CPU seconds as microseconds a job (None stays None)."""
        return None if seconds is None or not self.jobs else seconds / self.jobs * 1e6


def medians(rounds: list[list[Figure]]) -> list[Figure]:
    """Each measurement's median run (by rate) over the rounds, in the first round's order."""
    result = []
    for same in zip(*rounds, strict=True):
        ranked = sorted(same, key=lambda figure: figure.rate)
        result.append(ranked[len(ranked) // 2])
    return result


def fresh_queue(prefix: str) -> str:
    return f"bench_{prefix}_{uuid.uuid4().hex[:8]}"


def fill(queue: JobQueue, name: str, count: int) -> None:
    queue.enqueue_many(Job(queue_name=name, payload={"i": i}) for i in range(count))


@contextmanager
def scratch_queue(queue: JobQueue, prefix: str, count: int = 0):
    """A fresh queue of `count` jobs, deleted afterwards: a measurement leaves no jobs
    behind (claimed-only jobs would stay Running and slow every later figure)."""
    name = fresh_queue(prefix)
    try:
        if count:
            fill(queue, name, count)
        yield name
    finally:
        # One statement: the ORM's delete would first collect every job for its cascades,
        # and benchmark jobs have no dependencies to cascade to.
        with connections[queue.using].cursor() as cursor:
            cursor.execute("DELETE FROM queues_job WHERE queue_name = %s", [name])


def enqueue_rates(queue: JobQueue, count: int) -> list[Figure]:
    with scratch_queue(queue, "enqueue") as name:
        began = time.perf_counter()
        for i in range(count):
            queue.enqueue(Job(queue_name=name, payload={"i": i}))
        one = Figure("enqueue", "enqueue (one by one)", count, time.perf_counter() - began)
    with scratch_queue(queue, "enqueue_many") as name:
        began = time.perf_counter()
        fill(queue, name, count)
        many = Figure("enqueue", "enqueue_many", count, time.perf_counter() - began)
    return [one, many]


def claim_rate(queue: JobQueue, count: int, size: int) -> Figure:
    """Claims only, as in the seed: one at a time (size 1) or in batches."""
    with scratch_queue(queue, f"claim{size}", count) as name:
        options = DequeueOptions.batch(size)
        claimed = 0
        began = time.perf_counter()
        while batch := queue.dequeue(name, options):
            claimed += len(batch)
        seconds = time.perf_counter() - began
    label = "single" if size == 1 else f"batch of {size}"
    return Figure("claim", label, claimed, seconds)


def claim_complete_rate(queue: JobQueue, count: int, size: int, limited: bool = False) -> Figure:
    """Hammerweb's claim-and-complete loop, the same loop the raw-SQL limit runs; `limited`:
    on a queue limited to `size` running jobs, so every claim also locks the queue's config
    row and counts its Running jobs (and is never cut short: the loop completes its batch
    before the next claim)."""
    with scratch_queue(queue, f"loop{size}", count) as name:
        if limited:
            queue.queue_config(name, max_running=size)
        options = DequeueOptions.batch(size)
        done = 0
        try:
            began = time.perf_counter()
            while batch := queue.dequeue(name, options):
                queue.finish_job_runs([(job, JobOutcome.completed()) for job in batch])
                done += len(batch)
            seconds = time.perf_counter() - began
        finally:
            QueueConfig.objects.using(queue.using).filter(queue_name=name).delete()
    label = f"hammerweb, batch {size}" + (f", limited to {size}" if limited else "")
    return Figure("claim+complete", label, done, seconds)


def raw_rate(count: int, size: int, queue: JobQueue) -> Figure:
    with scratch_queue(queue, f"raw{size}", count) as name:
        settings = connections[queue.using].settings_dict
        done, seconds = RawLoop(connection.vendor, settings).run(name, size)
    return Figure("claim+complete", f"raw SQL limit, batch {size}", done, seconds)


def worker_rate(queue: JobQueue, count: int, label: str, size: int, concurrency: int) -> Figure:
    with scratch_queue(queue, "worker", count) as name:
        seconds = _run_worker(queue, name, count, size, concurrency)
    return Figure("worker", label, count, seconds)


def _run_worker(queue: JobQueue, name: str, count: int, size: int, concurrency: int) -> float:
    from workers.api import Worker

    worker = Worker(
        queue,
        name,
        lambda job: None,
        poll_interval=timedelta(milliseconds=10),
        batch_size=size,
        batch_concurrency=concurrency,
    )
    stop = threading.Event()
    thread = threading.Thread(target=worker.run, args=(stop,), daemon=True)
    began = time.perf_counter()
    thread.start()
    # The worker's own tally, not a count query every few ms: the watching must not load
    # the database it measures. The database confirms it once at the end.
    while worker.stats.completed < count:
        if not thread.is_alive():
            raise RuntimeError("the benchmark worker stopped before finishing its jobs")
        time.sleep(0.002)
    seconds = time.perf_counter() - began
    stop.set()
    thread.join()
    completed = queue.get_job_counts_by_status(name)["Completed"]
    if completed != count:
        raise RuntimeError(f"the worker reported {count} jobs done, the database {completed}")
    return seconds
