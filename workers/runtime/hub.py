"""What the worker runs of one process share: one writer for every queue's outcomes and
starts, one heartbeat for every queue's leases and lost-run checks, one watcher of the stop
and one event loop for the async handlers. A `runworker` process gives all its queues one
hub, so that one statement records the completions of every queue; a `Worker` run alone
has a hub of its own. See docs/design/worker.md."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta

from workers.runtime.allowance import Allowance
from workers.runtime.executor import EventLoop
from workers.runtime.heartbeat import Heartbeat
from workers.runtime.state import RunState
from workers.runtime.writer import Writer

#: How often the watcher looks at the caller's stop (seconds).
WATCH_INTERVAL = 0.05


class Lane:
    """One worker run as the hub sees it: its queue's name, its state, its allowance (the
    writer gives back what its outcomes free) and who hears that one of its runs was taken
    away."""

    __slots__ = ("name", "state", "allowance", "on_lost", "left")

    def __init__(self, name: str, state: RunState, allowance: Allowance, on_lost: Callable):
        self.name = name
        self.state = state
        self.allowance = allowance
        self.on_lost = on_lost
        self.left = False  # its run is over: only its outbox's requests are left to write


class ProcessHub:
    """The lanes of one process's worker runs and the threads that serve them all. The
    lanes' states share the hub's lock, so that the writer waits on one condition for the
    requests of every lane."""

    def __init__(
        self,
        queue,
        lease: timedelta,
        check_interval: timedelta | None,
        stop: threading.Event,
        force: threading.Event,
    ) -> None:
        self.queue = queue
        self.lease = lease
        self.check_interval = check_interval
        self.stop = stop
        self.force = force
        self.lock = threading.Lock()
        self.requests = threading.Condition(self.lock)  # the writer: a lane's outbox
        self.lanes: list[Lane] = []
        self.stopping = False  # the watcher stopped every lane (lock held)
        self.closed = False
        self.finished = threading.Event()  # set with `closed`: the heartbeat ends
        self.writer = Writer(self)
        self.loop = EventLoop()
        self.threads: dict[str, threading.Thread] = {}

    @classmethod
    def for_worker(cls, worker, stop: threading.Event, force: threading.Event) -> ProcessHub:
        return cls(worker.queue, worker.lease_duration, worker.cancel_check_interval, stop, force)

    def accepts(self, worker, stop: threading.Event, force: threading.Event) -> bool:
        """Whether `worker`'s run can join: one queue object, so that one write records
        every lane's runs; one lease and check interval for the one heartbeat; one stop."""
        return (
            worker.queue is self.queue
            and worker.lease_duration == self.lease
            and worker.cancel_check_interval == self.check_interval
            and stop is self.stop
            and force is self.force
            and not self.closed
        )

    def new_state(self, stats, concurrency: int, unwritten_limit: int) -> RunState:
        return RunState(stats, concurrency, unwritten_limit, self.lock, self.requests)

    def join(
        self,
        state: RunState,
        allowance: Allowance,
        on_lost: Callable = lambda job: None,
        name: str = "",
    ) -> Lane:
        lane = Lane(name, state, allowance, on_lost)
        with self.lock:
            self.lanes.append(lane)
            stopping = self.stopping
        if stopping:  # joined after the stop: the watcher will not see this lane
            state.set_stopping()
        return lane

    def leave(self, lane: Lane) -> None:
        """`lane`'s run is over: the heartbeat no longer extends the leases of what it left
        running (a handler past the grace period), so that the reaper takes them back; the
        writer still writes what its outbox holds, then forgets it."""
        with self.lock:
            lane.left = True
            self.prune()

    def prune(self) -> None:
        """Forget the lanes that left with nothing more to write (lock held)."""
        self.lanes = [lane for lane in self.lanes if not lane.left or lane.state.outbox]

    def start(self) -> None:
        """Start the threads, once (a later call does nothing)."""
        with self.lock:
            if self.threads:
                return
            heartbeat = Heartbeat(
                self.queue,
                self.lease,
                self.in_flight,
                self.running_jobs,
                self.lost,
                self.check_interval,
            )
            self.threads = {
                "writer": threading.Thread(target=self.writer.run, name="writer"),
                "heartbeat": threading.Thread(
                    target=heartbeat.run, args=(self.finished,), name="heartbeat"
                ),
                "watch": threading.Thread(target=self._watch, name="watch"),
            }
        for thread in self.threads.values():
            # Daemons: a write or a beat that waits for the database must not keep the
            # process alive once its runs are over.
            thread.daemon = True
            thread.start()

    def close(self) -> None:
        """Every lane's run is over: the writer writes what is left and ends, and so do the
        heartbeat and the watcher."""
        with self.lock:
            self.closed = True
            self.requests.notify_all()
        self.finished.set()
        self.loop.close()

    # For the heartbeat: every lane's jobs -------------------------------------------------
    def _lanes(self) -> list[Lane]:
        with self.lock:
            return [lane for lane in self.lanes if not lane.left]

    def in_flight(self) -> list:
        return [job for lane in self._lanes() for job in lane.state.in_flight()]

    def running_jobs(self) -> list:
        return [job for lane in self._lanes() for job in lane.state.running_jobs()]

    def lost(self, job) -> None:
        """`job`'s run was taken away: tell the lane that runs it."""
        with self.lock:
            owner = next((lane for lane in self.lanes if id(job) in lane.state.running), None)
        if owner is not None:
            owner.on_lost(job)

    def _watch(self) -> None:
        """Turn the caller's stop (or force) into a wake-up of every lane's waiters."""
        while not (self.stop.wait(WATCH_INTERVAL) or self.force.is_set()):
            if self.finished.is_set():
                return
        with self.lock:
            self.stopping = True
            lanes = list(self.lanes)
        for lane in lanes:
            lane.state.set_stopping()
