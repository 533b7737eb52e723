"""One worker process: a `Worker` per queue in its own thread, the maintenance thread, and
the process's `WorkerProcess` row (heartbeat, held and running counts), written through the
queue's store and deleted on a clean exit. Signals are the command's business: this takes
`stop` and `force` events. Settings' defaults: workers/defaults.py. See
docs/design/processes.md."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import timedelta

from django.db import connection
from django.utils import timezone

from queues.api import JobQueue
from queues.models import WorkerProcess
from queues.ops.bulk import BulkRunner
from queues.ops.maintenance import Pruner, Reaper
from workers import defaults
from workers.process.maintenance import MaintenanceLoop
from workers.registry import dispatch
from workers.runtime.executor import RunawayHandler
from workers.runtime.faults import GaveUp, retrying
from workers.runtime.hub import ProcessHub
from workers.worker import Worker

logger = logging.getLogger("workers")
UNREGISTER_PATIENCE = 30.0


@dataclass
class ProcessSettings:
    queues: list[str]
    batch_size: int = defaults.BATCH_SIZE
    concurrency: int = defaults.CONCURRENCY
    lease: timedelta = defaults.LEASE
    poll_interval: timedelta = defaults.POLL_INTERVAL
    burst: bool = False
    grace_period: timedelta = defaults.GRACE_PERIOD
    reaper: Reaper | None = None
    pruner: Pruner | None = None
    bulk: BulkRunner | None = None
    using: str = "default"
    heartbeat_interval: timedelta = defaults.HEARTBEAT_INTERVAL
    progress_interval: timedelta = defaults.PROGRESS_INTERVAL
    handler: object = field(default=dispatch)
    #: This process's id: its `WorkerProcess` row's, stamped on its claims (a supervisor
    #: names it, to hand back the jobs of a child that died).
    process_id: uuid.UUID = field(default_factory=uuid.uuid4)


@dataclass
class Summary:
    processed: int = 0
    completed: int = 0
    failed: int = 0
    seconds: float = 0.0
    forced: bool = False
    crashed: bool = False

    def __str__(self) -> str:
        rate = self.processed / self.seconds if self.seconds else 0.0
        return (
            f"processed {self.processed} jobs ({self.completed} completed, {self.failed} "
            f"failed) in {self.seconds:.1f}s ({rate:.1f} jobs/s)"
        )


class WorkerProcessRuntime:
    def __init__(self, settings: ProcessSettings) -> None:
        self.settings = settings
        self.queue = queue = JobQueue(using=settings.using)
        self.workers = [
            Worker(
                queue,
                name,
                settings.handler,
                batch_size=settings.batch_size,
                batch_concurrency=settings.concurrency,
                lease_duration=settings.lease,
                poll_interval=settings.poll_interval,
                shutdown_grace_period=settings.grace_period,
                burst=settings.burst,
                claimed_by=settings.process_id,
            )
            for name in settings.queues
        ]
        self.row: WorkerProcess | None = None
        self.crashed = False

    def run(self, stop: threading.Event, force: threading.Event) -> Summary:
        began = time.monotonic()
        self.row = self._register(stop)
        # One writer, heartbeat and watcher for every queue's run (hub.py).
        hub = ProcessHub.for_worker(self.workers[0], stop, force) if self.workers else None
        threads = [
            threading.Thread(
                target=self._run_worker,
                args=(worker, stop, force, hub),
                name=f"worker-{worker.queue_name}",
            )
            for worker in self.workers
        ]
        maintenance_stop = threading.Event()
        loop = MaintenanceLoop(self.settings.reaper, self.settings.pruner, self.settings.bulk)
        loop.run_all_once(stop)
        if loop.services:
            threads.append(
                threading.Thread(target=loop.run, args=(maintenance_stop,), name="maintenance")
            )
        for thread in threads:
            thread.daemon = True
            thread.start()
        workers = threads[: len(self.workers)]
        beat = self.settings.heartbeat_interval.total_seconds()
        progress = self.settings.progress_interval.total_seconds()
        next_beat = next_progress = time.monotonic()
        last_processed = 0
        try:
            while any(t.is_alive() for t in workers):
                if force.is_set():
                    break
                now = time.monotonic()
                if now >= next_beat:
                    self._heartbeat(stop)
                    next_beat = now + beat
                if now >= next_progress:
                    last_processed = self._progress(last_processed, progress)
                    next_progress = now + progress
                for thread in workers:
                    thread.join(0.1)
        finally:
            maintenance_stop.set()
            for thread in threads:
                thread.join(1 if force.is_set() else 10)
            if hub is not None:
                hub.close()
            self._unregister(force)
            connection.close()
        return self._summary(time.monotonic() - began, force.is_set())

    def _run_worker(self, worker: Worker, stop: threading.Event, force: threading.Event, hub):
        try:
            worker.run(stop, force, hub=hub)
        except RunawayHandler:
            # Logged by the run. The process exits 1 once every worker drained: the thread
            # that runs on goes with it, and the supervisor starts a fresh process.
            self.crashed = True
            stop.set()
        except Exception:
            # The whole process stops (and exits 1): a supervisor or an operator restarts
            # it, rather than it running on with a queue nobody works.
            logger.exception("the worker of %s crashed; stopping", worker.queue_name)
            self.crashed = True
            stop.set()

    def _totals(self) -> dict[str, int]:
        totals: dict[str, int] = {}
        for worker in self.workers:
            for key, value in worker.stats.snapshot().items():
                totals[key] = totals.get(key, 0) + value
        return totals

    def _summary(self, seconds: float, forced: bool) -> Summary:
        totals = self._totals()
        return Summary(
            processed=totals.get("processed", 0),
            completed=totals.get("completed", 0),
            failed=totals.get("failed", 0),
            seconds=seconds,
            forced=forced,
            crashed=self.crashed,
        )

    def _progress(self, last: int, interval: float) -> int:
        totals = self._totals()
        processed = totals.get("processed", 0)
        if processed != last:
            logger.info(
                "%d jobs processed (%.1f/s), %d held, %d running",
                processed,
                (processed - last) / interval,
                totals.get("held", 0),
                totals.get("running", 0),
            )
        return processed

    # The WorkerProcess row ----------------------------------------------------------------
    def _register(self, stop: threading.Event) -> WorkerProcess | None:
        s = self.settings
        row = WorkerProcess(
            id=s.process_id,
            hostname=socket.gethostname()[:255],
            pid=os.getpid(),
            queues=list(s.queues),
            settings={**self.workers[0].settings(), "queues": list(s.queues)}
            if self.workers
            else {},
            batch_size=s.batch_size,
            concurrency=s.concurrency,
        )
        try:
            retrying(
                lambda: self.queue.store.register_process(row),
                what="registering the worker process",
                using=s.using,
                give_up=stop,
            )
        except GaveUp:
            return None
        logger.info("worker process %s:%s started for %s", row.hostname, row.pid, s.queues)
        return row

    def _heartbeat(self, stop: threading.Event) -> None:
        if self.row is None:
            return
        totals = self._totals()
        store, row = self.queue.store, self.row
        held, running = max(0, totals.get("held", 0)), max(0, totals.get("running", 0))
        processed = totals.get("processed", 0)

        def beat():
            if not store.beat_process(row.id, held, running, processed, timezone.now()):
                # Pruned while the database was away: register again.
                row.last_heartbeat_at = timezone.now()
                store.register_process(row)

        try:
            retrying(beat, what="heartbeating", using=self.settings.using, give_up=stop)
        except GaveUp:
            pass

    def _unregister(self, force: threading.Event) -> None:
        if self.row is None:
            return
        # Wait a while for a database that is away, not for ever; `force` ends the wait.
        give_up = threading.Event()
        timer = threading.Timer(UNREGISTER_PATIENCE, give_up.set)
        timer.daemon = True
        timer.start()
        if force.is_set():
            give_up.set()
        try:
            retrying(
                lambda: self.queue.store.unregister_process(self.row.id),
                what="removing the worker process row",
                using=self.settings.using,
                give_up=give_up,
            )
        except GaveUp:
            logger.warning("the worker process row was left behind; the pruner removes it")
        finally:
            timer.cancel()
