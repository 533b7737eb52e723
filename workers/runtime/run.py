"""One run of a `Worker`: it starts the threads (the claimer, the slots, the writer, the
heartbeat and the watcher) on the state they share (state.py), and ends them
(shutdown.py). See docs/design/worker.md."""

from __future__ import annotations

import logging
import threading

from queues.api import DequeueOptions
from workers.runtime.allowance import Allowance
from workers.runtime.claimer import Claimer
from workers.runtime.executor import RunawayHandler
from workers.runtime.faults import close_connection
from workers.runtime.hub import ProcessHub
from workers.runtime.shutdown import shut_down
from workers.runtime.slots import Slot

logger = logging.getLogger("workers")


class WorkerRun:
    def __init__(
        self, worker, stop: threading.Event, force: threading.Event, hub: ProcessHub | None = None
    ) -> None:
        self.worker = worker
        self.stop = stop
        self.force = force
        #: Whether the hub is this run's alone (it closes with the run).
        self.own_hub = hub is None or not hub.accepts(worker, stop, force)
        if hub is not None and self.own_hub:
            logger.debug(
                "queue %s: a hub of its own (its settings are not the hub's)", worker.queue_name
            )
        self.hub = ProcessHub.for_worker(worker, stop, force) if self.own_hub else hub
        # Two batches' outcomes may wait for the writer: one being written while the
        # slots run the next claim's jobs.
        self.state = self.hub.new_state(
            worker.stats, worker.batch_concurrency, unwritten_limit=2 * worker.batch_size
        )
        self.allowance = Allowance(worker.throttle, worker.limiters)
        self.loop = self.hub.loop
        options = DequeueOptions(lease_duration=worker.lease_duration)
        options = options.with_priority_weights(worker.priority_weights)
        self.claimer = Claimer(worker, self.state, self.allowance, options, stop)
        self.writer = self.hub.writer
        # A caller's queue object may lack the checked write; its held jobs then get start
        # markers.
        self.checks = hasattr(worker.queue, "write_runs")
        self.runaway: RunawayHandler | None = None
        #: The threads a health probe watches, by role (set when the run starts).
        self.vital: dict[str, threading.Thread] = {}
        self.lane = self.hub.join(self.state, self.allowance, self._stop_handler, worker.queue_name)

    def run(self) -> None:
        worker, state, hub = self.worker, self.state, self.hub
        hub.start()
        slots = [
            threading.Thread(
                target=Slot(
                    worker, state, self.allowance, self.loop, self._runaway, self.checks
                ).run,
                name=f"{worker.queue_name}-slot-{i}",
            )
            for i in range(worker.batch_concurrency)
        ]
        self.vital = {
            "claimer": threading.current_thread(),
            "heartbeat": hub.threads["heartbeat"],
            "writer": hub.threads["writer"],
        }
        for thread in slots:
            # Daemons: a job still running when the grace period ends must not keep the
            # process alive; its lease expires and the reaper takes it back.
            thread.daemon = True
            thread.start()
        try:
            self.claimer.run()
        finally:
            try:
                shut_down(worker, state, self.allowance, self.force)
            finally:
                state.finished.set()
                hub.leave(self.lane)
                if self.own_hub:
                    hub.close()
                close_connection(getattr(worker.queue, "using", "default"))
        if self.runaway is not None:
            raise self.runaway

    def _stop_handler(self, job) -> None:
        """`job`'s run was taken from this worker (cancelled, retried, released, reaped)
        while its handler runs: ask the handler to stop. A sync one sees it in
        `job.cancel_requested()`, an async one's task is cancelled; its slot notes how it
        ended and writes nothing else of its run (see slots.py)."""
        if job.cancel_requested():
            return  # asked already
        logger.info(
            "job %s of %s: its run is no longer this worker's (cancelled, retried or taken "
            "back); its handler is asked to stop",
            job.id,
            self.worker.queue_name,
        )
        job._cancel_requested = True  # the flag `Job.cancel_requested` reads
        self.loop.cancel(job)

    def _runaway(self, job, thread: threading.Thread) -> None:
        """A slot's handler thread did not come back: stop claiming and drain; `run` then
        raises, so that the process ends and a fresh one takes over."""
        if self.state.finished.is_set():
            return  # the run is over anyway
        grace = self.worker.shutdown_grace_period.total_seconds()
        timeout = job.timeout or self.worker.default_timeout
        self.runaway = RunawayHandler(
            f"job {job.id} of {self.worker.queue_name}: its handler is still running "
            f"{grace:g}s after its {timeout.total_seconds():g}s timeout (thread {thread.name})"
        )
        logger.error(
            "%s; the worker stops claiming and drains, and the process exits so that its "
            "supervisor starts a fresh one",
            self.runaway,
        )
        self.state.set_stopping()
