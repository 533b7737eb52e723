"""The measurements of `manage.py benchqueue`, after the seed's batch_vs_single_claim_throughput:
claims one at a time and in batches, end-to-end workers with a no-op handler, enqueue one by
one and in bulk, and the raw-SQL limit of the same claim-and-complete loop."""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass
from datetime import timedelta

from django.db import connection, connections

from queues.api import DequeueOptions, Job, JobOutcome, JobQueue

from .raw import RawLoop


@dataclass
class Figure:
    group: str
    label: str
    jobs: int
    seconds: float

    @property
    def rate(self) -> float:
        return self.jobs / self.seconds if self.seconds else 0.0


def fresh_queue(prefix: str) -> str:
    return f"bench_{prefix}_{uuid.uuid4().hex[:8]}"


def fill(queue: JobQueue, name: str, count: int) -> None:
    queue.enqueue_many(Job(queue_name=name, payload={"i": i}) for i in range(count))


def enqueue_rates(queue: JobQueue, count: int) -> list[Figure]:
    name = fresh_queue("enqueue")
    began = time.perf_counter()
    for i in range(count):
        queue.enqueue(Job(queue_name=name, payload={"i": i}))
    one = Figure("enqueue", "enqueue (one by one)", count, time.perf_counter() - began)
    name = fresh_queue("enqueue_many")
    began = time.perf_counter()
    fill(queue, name, count)
    many = Figure("enqueue", "enqueue_many", count, time.perf_counter() - began)
    return [one, many]


def claim_rate(queue: JobQueue, count: int, size: int) -> Figure:
    """Claims only, as in the seed: one at a time (size 1) or in batches."""
    name = fresh_queue(f"claim{size}")
    fill(queue, name, count)
    options = DequeueOptions.batch(size)
    claimed = 0
    began = time.perf_counter()
    while batch := queue.dequeue(name, options):
        claimed += len(batch)
    label = "single" if size == 1 else f"batch of {size}"
    return Figure("claim", label, claimed, time.perf_counter() - began)


def claim_complete_rate(queue: JobQueue, count: int, size: int) -> Figure:
    """Hammerweb's claim-and-complete loop, the same loop the raw-SQL limit runs."""
    name = fresh_queue(f"loop{size}")
    fill(queue, name, count)
    options = DequeueOptions.batch(size)
    done = 0
    began = time.perf_counter()
    while batch := queue.dequeue(name, options):
        queue.finish_job_runs([(job, JobOutcome.completed()) for job in batch])
        done += len(batch)
    return Figure("claim+complete", f"hammerweb, batch {size}", done, time.perf_counter() - began)


def raw_rate(count: int, size: int, queue: JobQueue) -> Figure:
    name = fresh_queue(f"raw{size}")
    fill(queue, name, count)
    settings = connections[queue.using].settings_dict
    done, seconds = RawLoop(connection.vendor, settings).run(name, size)
    return Figure("claim+complete", f"raw SQL limit, batch {size}", done, seconds)


def worker_rate(queue: JobQueue, count: int, label: str, size: int, concurrency: int) -> Figure:
    from workers.api import Worker

    name = fresh_queue("worker")
    fill(queue, name, count)
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
    while queue.get_job_counts_by_status(name)["Completed"] < count:
        time.sleep(0.01)
    seconds = time.perf_counter() - began
    stop.set()
    thread.join()
    return Figure("worker", label, count, seconds)
