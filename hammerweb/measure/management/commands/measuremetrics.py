"""`manage.py measuremetrics`: the database time of one Prometheus scrape (`/metrics/`).

As `measureoverview` (whose `measure` it uses): every query of a scrape of `QueueCollector`
timed by `connection.execute_wrapper`, not the rendering; the median and the slowest of
`--repeat` scrapes after one warm-up, with the slowest query of the median scrape (`-v 2`:
each query), failing when the median is over `--budget-ms`.
"""

from __future__ import annotations

from django.db import connection
from django.db.models import Max
from prometheus_client import generate_latest

from hammerweb.measure.management.commands import measureoverview
from hammerweb.measure.management.commands.measureoverview import measure
from queues.models import Job
from queues.ops.metrics import queue_registry
from queues.store.counters.counts import counts_by_queue


class Command(measureoverview.Command):
    """measureoverview's options (--repeat, --budget-ms, --as-of-newest), a scrape's read."""

    help = "Time the database queries of a metrics scrape (median and slowest of --repeat)."

    def handle(self, *args, repeat: int, budget_ms: float, as_of_newest: bool, **options):
        jobs = sum(n for counts in counts_by_queue().values() for n in counts.values())
        now = Job.objects.aggregate(at=Max("created_at"))["at"] if as_of_newest else None
        registry = queue_registry(clock=lambda: now) if now else queue_registry()
        self.stdout.write(
            f"{connection.vendor}: {jobs:,} jobs; metrics scrape database time, "
            f"{repeat} scrapes after one warm-up"
            + (f", as of {now:%Y-%m-%d %H:%M:%S}" if now else "")
        )
        measure(
            self.stdout,
            "scrape",
            lambda: generate_latest(registry),
            repeat,
            budget_ms,
            options["verbosity"],
        )
