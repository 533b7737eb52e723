"""One run of a `Worker`: it starts the threads (the claimer, the slots, the writer, the
heartbeat and the watcher) on the state they share (state.py), and ends them
(shutdown.py). See docs/design/worker.md."""

from __future__ import annotations

import logging
import threading

from queues.api import DequeueOptions
from workers.runtime.allowance import Allowance
from workers.runtime.claimer import Claimer
from workers.runtime.executor import EventLoop, RunawayHandler
from workers.runtime.faults import close_connection
from workers.runtime.heartbeat import Heartbeat
from workers.runtime.shutdown import shut_down
from workers.runtime.slots import Slot
from workers.runtime.state import RunState
from workers.runtime.writer import Writer

logger = logging.getLogger("workers")


class WorkerRun:
    def __init__(self, worker, stop: threading.Event, force: threading.Event) -> None:
        self.worker = worker
        self.stop = stop
        self.force = force
        # Two batches' outcomes may wait for the writer: one being written while the
        # slots run the next claim's jobs.
        self.state = RunState(
            worker.stats, worker.batch_concurrency, unwritten_limit=2 * worker.batch_size
        )
        self.allowance = Allowance(worker.throttle, worker.limiters)
        self.loop = EventLoop()
        options = DequeueOptions(lease_duration=worker.lease_duration)
        options = options.with_priority_weights(worker.priority_weights)
        self.claimer = Claimer(worker, self.state, self.allowance, options, stop)
        self.writer = Writer(worker.queue, self.state, self.allowance, force)
        # A caller's queue object may lack the checked write; its held jobs then get start
        # markers.
        self.checks = hasattr(worker.queue, "write_runs")
        self.runaway: RunawayHandler | None = None
        #: The threads a health probe watches, by role (set when the run starts).
        self.vital: dict[str, threading.Thread] = {}

    def run(self) -> None:
        worker, state = self.worker, self.state
        name = worker.queue_name
        heartbeat = Heartbeat(
            worker.queue,
            worker.lease_duration,
            state.in_flight,
            state.running_jobs,
            self._stop_handler,
            worker.cancel_check_interval,
        )
        threads = [
            threading.Thread(target=self._watch, name=f"{name}-watch"),
            threading.Thread(
                target=heartbeat.run, args=(state.finished,), name=f"{name}-heartbeat"
            ),
            threading.Thread(target=self.writer.run, name=f"{name}-writer"),
        ]
        self.vital = {
            "claimer": threading.current_thread(),
            "heartbeat": threads[1],
            "writer": threads[2],
        }
        threads += [
            threading.Thread(
                target=Slot(
                    worker, state, self.allowance, self.loop, self._runaway, self.checks
                ).run,
                name=f"{name}-slot-{i}",
            )
            for i in range(worker.batch_concurrency)
        ]
        for thread in threads:
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
                self.loop.close()
                close_connection(getattr(worker.queue, "using", "default"))
        if self.runaway is not None:
            raise self.runaway

    def _watch(self) -> None:
        """Turn the caller's stop (or force) into a wake-up of every waiter."""
        while not (self.stop.wait(0.05) or self.force.is_set()):
            if self.state.finished.is_set():
                return
        self.state.set_stopping()

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
