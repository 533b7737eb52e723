"""Prometheus metrics of the queues' state, read from the database at each scrape by a custom
collector (`QueueCollector`): the trigger-kept counts, the per-minute completions, the oldest
due job and the live worker processes, four cheap statements whatever the number of jobs. No
counter: worker processes count those. See docs/design/maintenance.md."""

from __future__ import annotations

import hmac
from datetime import timedelta

from django.utils import timezone
from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily

from queues import conf
from queues.enums import JobStatus
from queues.models import WorkerProcess
from queues.reads import stats
from queues.store.counters import completions
from queues.store.counters.counts import counts_by_queue

#: The most worker processes listed one by one (a scrape stays bounded).
MAX_PROCESSES = 1000


def token_allows(authorization: str | None) -> bool:
    """Whether an `Authorization` header carries HAMMERWEB["METRICS_TOKEN"] (compared in
    constant time, so that the answer's timing tells nothing of the token)."""
    token = conf.get("METRICS_TOKEN")
    scheme, _, given = (authorization or "").partition(" ")
    if not token or scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(given.strip().encode(), token.encode())


class QueueCollector:
    """The queues' state in the database `using`, as gauges."""

    def __init__(self, using: str = "default", clock=timezone.now) -> None:
        self.using = using
        self.clock = clock  # a test's clock can stand in

    def describe(self):
        return []  # registering must not read the database

    def collect(self):
        now = self.clock()
        counts = counts_by_queue(self.using)
        names = sorted(counts)
        jobs = GaugeMetricFamily(
            "hammerweb_jobs", "Jobs per queue and status (exact)", labels=["queue", "status"]
        )
        for name in names:
            for status in JobStatus.values:
                jobs.add_metric([name, status], counts[name].get(status, 0))
        yield jobs

        pending = [name for name in names if counts[name].get(JobStatus.PENDING)]
        due = stats.oldest_due(pending, now) if pending else {}
        oldest = GaugeMetricFamily(
            "hammerweb_queue_oldest_due_seconds",
            "Seconds since the oldest job a worker could claim became due (0: none due)",
            labels=["queue"],
        )
        for name in names:
            since = due.get(name)
            oldest.add_metric([name], max(0.0, (now - since).total_seconds()) if since else 0.0)
        yield oldest

        minute = stats.last_full_minute(now)
        done = completions.per_minute(names, minute, minute, self.using) if names else {}
        last = GaugeMetricFamily(
            "hammerweb_queue_completions_last_minute",
            "Jobs completed in the last full minute (UTC), all workers together",
            labels=["queue"],
        )
        for name in names:
            last.add_metric([name], done.get(name, {}).get(minute, 0))
        yield last

        yield from self._workers(now)

    def _workers(self, now):
        cutoff = now - stats.WORKER_STALE_AFTER
        rows = (
            WorkerProcess.objects.using(self.using)
            .filter(last_heartbeat_at__gte=cutoff)
            .order_by()
            .values_list("id", "hostname", "pid", "jobs_held", "jobs_running")[:MAX_PROCESSES]
        )
        alive = GaugeMetricFamily(
            "hammerweb_workers_alive",
            "Worker processes that heartbeat within the last "
            f"{stats.WORKER_STALE_AFTER // timedelta(seconds=1)} s",
        )
        labels = ["process", "hostname", "pid"]
        held = GaugeMetricFamily(
            "hammerweb_process_jobs_held", "Jobs claimed, not started, per process", labels=labels
        )
        running = GaugeMetricFamily(
            "hammerweb_process_jobs_running", "Jobs running per process", labels=labels
        )
        n = 0
        for process_id, hostname, pid, jobs_held, jobs_running in rows:
            n += 1
            key = [str(process_id), hostname, str(pid)]
            held.add_metric(key, jobs_held)
            running.add_metric(key, jobs_running)
        alive.add_metric([], n)
        yield from (alive, held, running)


def queue_registry(using: str = "default", clock=timezone.now) -> CollectorRegistry:
    """A registry of the queues' state alone (what the view serves)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(QueueCollector(using, clock))
    return registry
