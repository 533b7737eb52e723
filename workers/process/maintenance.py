"""The maintenance thread of a worker process: the reaper and the pruner, each on its own
interval, with database faults retried like the workers' own calls, and the dashboard's
bulk operations (`queues.ops.bulk.BulkRunner`)."""

from __future__ import annotations

import logging
import threading
import time

from django.db import connection

from queues.ops.bulk import BulkRunner
from queues.ops.maintenance import Pruner, Reaper
from workers import metrics
from workers.runtime.faults import GaveUp, retrying

logger = logging.getLogger("workers")


class MaintenanceLoop:
    def __init__(
        self, reaper: Reaper | None, pruner: Pruner | None, bulk: BulkRunner | None = None
    ) -> None:
        self.startup = [s for s in (reaper, pruner) if s is not None]
        # The dashboard's bulk operations wait for the loop, not the workers' start.
        self.services = [*self.startup, *([bulk] if bulk is not None else [])]

    def run_all_once(self, stop: threading.Event) -> None:
        """One pass of each service, before the workers start: a restarted worker process
        takes back its predecessor's expired jobs before it claims anything."""
        try:
            for service in self.startup:
                self._run_once(service, stop)
        except GaveUp:
            pass
        finally:
            connection.close()

    def run(self, stop: threading.Event) -> None:
        start = time.monotonic()
        due = {s: start + s.interval.total_seconds() for s in self.services}
        try:
            while not stop.is_set():
                now = time.monotonic()
                for service in self.services:
                    if now >= due[service]:
                        self._run_once(service, stop)
                        due[service] = time.monotonic() + service.interval.total_seconds()
                stop.wait(max(0.05, min(due.values()) - time.monotonic()))
        except GaveUp:
            pass
        finally:
            connection.close()

    def _run_once(self, service, stop: threading.Event) -> None:
        name = type(service).__name__.lower()
        try:
            outcome = retrying(
                service.run_once,
                what=f"running the {name}",
                using=service.queue.using,
                give_up=stop,
            )
        except GaveUp:
            raise
        except Exception:  # a bug or a bad row must not stop the worker process
            logger.exception("the %s failed", name)
            return
        logger.debug("%s: %s", name, outcome)
        if getattr(outcome, "requeued", None) or getattr(outcome, "dead", None):
            metrics.reaped(len(outcome.requeued), len(outcome.dead))
            logger.info(
                "reaper: %d jobs requeued, %d dead", len(outcome.requeued), len(outcome.dead)
            )
