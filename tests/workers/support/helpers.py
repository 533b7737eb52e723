"""Helpers of the worker tests: the seed's `enqueue_jobs`, `wait_for_status` and
`counting_handler`, and a worker running in a thread."""

from __future__ import annotations

import threading
import time
from collections import Counter
from contextlib import contextmanager

from queues.api import Job


def enqueue_jobs(queue, queue_name: str, count: int) -> list:
    return queue.enqueue_many([Job(queue_name=queue_name, payload={"i": i}) for i in range(count)])


def wait_for_status(queue, queue_name: str, status: str, count: int, timeout: float) -> None:
    """Wait until `queue_name` has `count` jobs in `status`, or fail after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        counts = queue.get_job_counts_by_status(queue_name)
        if counts.get(status, 0) == count:
            return
        assert time.monotonic() < deadline, f"timed out waiting for {count} {status} jobs: {counts}"
        time.sleep(0.05)


def wait_until(predicate, timeout: float, message: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, message
        time.sleep(0.01)


class Runs:
    """Runs per job id, counted by handlers in any thread."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: Counter = Counter()
        self.order: list = []

    def record(self, job) -> None:
        with self.lock:
            self.counts[job.id] += 1
            self.order.append(job.id)

    def snapshot(self) -> tuple[Counter, list]:
        with self.lock:
            return Counter(self.counts), list(self.order)


def counting_handler(runs: Runs, delay: float):
    """A handler that counts runs per job id, sleeping `delay` seconds in each."""

    def handler(job):
        runs.record(job)
        time.sleep(delay)

    return handler


class RunningWorker:
    """`worker.run(stop)` in a thread; `shutdown()` stops it and re-raises what it raised."""

    def __init__(self, worker) -> None:
        self.worker = worker
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.worker.run(self.stop)
        except BaseException as exc:
            self.error = exc

    def shutdown(self, timeout: float = 60) -> None:
        self.stop.set()
        self.join(timeout)

    def join(self, timeout: float = 60) -> None:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the worker did not stop"
        if self.error is not None:
            raise self.error


@contextmanager
def running(*workers):
    """Run `workers` in threads; stop each at the end (also when the test fails)."""
    started = [RunningWorker(worker) for worker in workers]
    try:
        yield started
    finally:
        for run in started:
            run.stop.set()
        for run in started:
            run.join()
