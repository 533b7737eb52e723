"""The Prometheus metrics of one worker process, in prometheus_client's default registry
(served by `runworker --metrics-port`): counters and histograms of what this process did
since it started, and its held and running jobs read at each scrape (`RuntimeCollector`).
Why per-process counters: docs/design/processes.md."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import lru_cache

from prometheus_client import REGISTRY, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily

from queues.api import JobStatus

#: Seconds, from a millisecond's job to an hour's.
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600)

COMPLETED = Counter("hammerweb_worker_jobs_completed", "Runs completed by this process", ["queue"])
FAILED = Counter(
    "hammerweb_worker_jobs_failed",
    "Runs that failed with no retry left, by the status they left (Failed, Dead, TimedOut)",
    ["queue", "status"],
)
RETRIED = Counter(
    "hammerweb_worker_jobs_retried", "Runs that failed and were scheduled again", ["queue"]
)
REAPED = Counter(
    "hammerweb_worker_reaper_rescues",
    "Jobs whose lease expired that this process's reaper took back: requeued, or dead "
    "(no attempt left)",
    ["outcome"],
)
RUN_TIME = Histogram(
    "hammerweb_job_run_seconds", "How long handlers ran, per queue", ["queue"], buckets=BUCKETS
)
LATENCY = Histogram(
    "hammerweb_job_start_latency_seconds",
    "From when a job was due (its enqueue, unless delayed or retried later) to its start",
    ["queue"],
    buckets=BUCKETS,
)


@lru_cache(maxsize=1024)
def _series(metric, *labels):
    # A labelled child is looked up under the metric's lock: once per queue is enough.
    return metric.labels(*labels)


def ran(queue: str, seconds: float) -> None:
    _series(RUN_TIME, queue).observe(seconds)


def started(job) -> None:
    if job.scheduled_at is not None:  # a subtraction: cheaper than an aware .timestamp()
        waited = (datetime.now(UTC) - job.scheduled_at).total_seconds()
        _series(LATENCY, job.queue_name).observe(max(0.0, waited))


def recorded(queue: str, kind: str, status: str, count: int = 1) -> None:
    """`count` runs' outcomes (`kind`) as written, leaving the jobs in `status`."""
    if kind == "completed":
        _series(COMPLETED, queue).inc(count)
    elif status in (JobStatus.PENDING, JobStatus.RETRYING):
        _series(RETRIED, queue).inc(count)
    else:
        _series(FAILED, queue, str(status)).inc(count)


def reaped(requeued: int, dead: int) -> None:
    if requeued:
        _series(REAPED, "requeued").inc(requeued)
    if dead:
        _series(REAPED, "dead").inc(dead)


class RuntimeCollector:
    """The jobs each queue's worker in this process holds and runs, read at each scrape."""

    def __init__(self, workers) -> None:
        self.workers = workers

    def describe(self):
        return []

    def collect(self):
        held = GaugeMetricFamily(
            "hammerweb_worker_jobs_held",
            "Jobs claimed by this process, not started",
            labels=["queue"],
        )
        running = GaugeMetricFamily(
            "hammerweb_worker_jobs_running", "Jobs running in this process", labels=["queue"]
        )
        for worker in self.workers:
            snapshot = worker.stats.snapshot()
            held.add_metric([worker.queue_name], max(0, snapshot["held"]))
            running.add_metric([worker.queue_name], max(0, snapshot["running"]))
        yield held
        yield running


def watch(workers) -> RuntimeCollector:
    """Register the held and running gauges of `workers` (unregister the result after)."""
    collector = RuntimeCollector(workers)
    REGISTRY.register(collector)
    return collector


def unwatch(collector: RuntimeCollector) -> None:
    REGISTRY.unregister(collector)
