"""How an idle worker notices new work soon without polling the jobs table: after a short
claim the claimer sleeps until a per-database signal (NOTIFY; elsewhere the process's one
look for every idle queue, `watch.py`), a scheduled job's time, the queue's next rate
window, the poll interval or the stop. See docs/design/worker.md."""

from __future__ import annotations

import logging
import threading
import time

from django.db import DatabaseError

from queues.store.listen import Listener, can_listen
from workers.runtime.watch import Watch

logger = logging.getLogger("workers")

CHANNEL = "hammerweb_pickup"
#: How often an idle worker looks for a change where there is no NOTIFY: on SQLite a PRAGMA
#: that reads no table, on MariaDB `next_due` (a few index probes). SQLite at 20 ms halves
#: its pickup latency (p50 31 -> 17 ms) for 1.7x the idle CPU: see docs/benchmarks/journal.md.
CHECK_SECONDS = {"sqlite": 0.05, "mysql": 0.05}
#: PostgreSQL through a transaction-mode pooler, where no LISTEN is heard: `next_due`, as
#: on MariaDB.
POOLED_CHECK_SECONDS = CHECK_SECONDS["mysql"]
#: How long a worker's first claim waits for the LISTEN connection (else the poll covers it).
LISTEN_WAIT_SECONDS = 5.0
#: The most doublings of the check's wait after checks whose claims got nothing.
MAX_BACKOFF = 8

#: Why a sleep ended; the reasons a worker logs at debug level (tests read them).
NOTIFY = "notify"  # a NOTIFY for the queue
RECONNECT = "reconnect"  # the LISTEN connection came back
CHANGED = "changed"  # a check found a claimable job
SCHEDULED = "scheduled"  # the earliest scheduled job is due
RATE = "rate"  # the queue's next rate window opened
POLL = "poll"  # the poll interval ended
STOP = "stop"


class PickupListener(Listener):
    def __init__(self, hub: Hub) -> None:
        super().__init__(lambda: None, hub.using, CHANNEL, name="hammerweb-pickup")
        self.hub = hub

    def notified(self, payload: str) -> None:
        self.hub.wake(payload, NOTIFY)

    def reconnected(self) -> None:
        self.hub.wake(None, RECONNECT)  # what was sent meanwhile is lost: everyone looks


class Hub:
    """The LISTEN connection of one process and database, and the sleepers of each queue.
    It listens while any worker of the process subscribes, and closes with the last one
    (a test database must be free to drop)."""

    _hubs: dict[str, Hub] = {}
    _hubs_lock = threading.Lock()

    def __init__(self, using: str) -> None:
        self.using = using
        self.lock = threading.Lock()
        self.sleepers: dict[str, list[Pickup]] = {}
        self.listener: PickupListener | None = None

    @classmethod
    def of(cls, using: str) -> Hub:
        with cls._hubs_lock:
            hub = cls._hubs.get(using)
            if hub is None:
                hub = cls._hubs[using] = cls(using)
            return hub

    def subscribe(self, pickup: Pickup) -> PickupListener:
        with self.lock:
            self.sleepers.setdefault(pickup.queue_name, []).append(pickup)
            if self.listener is None:
                self.listener = PickupListener(self)
                self.listener.start()
            return self.listener

    def unsubscribe(self, pickup: Pickup) -> None:
        with self.lock:
            mine = self.sleepers.get(pickup.queue_name, [])
            if pickup in mine:
                mine.remove(pickup)
            if not mine:
                self.sleepers.pop(pickup.queue_name, None)
            listener = self.listener if not self.sleepers else None
            if listener is not None:
                self.listener = None
        if listener is not None:
            listener.stop()
            listener.join(timeout=LISTEN_WAIT_SECONDS)

    def wake(self, queue_name: str | None, reason: str) -> None:
        with self.lock:
            if queue_name is None:
                woken = [p for sleepers in self.sleepers.values() for p in sleepers]
            else:
                woken = list(self.sleepers.get(queue_name, ()))
        for pickup in woken:
            pickup.wake(reason)


class Pickup:
    """The sleep of one claimer between claims (see the module's docstring)."""

    def __init__(self, queue, queue_name: str, state, poll_seconds: float, burst=False) -> None:
        self.queue = queue
        self.queue_name = queue_name
        self.state = state
        self.event: threading.Event = state.wake  # set on stop, and by `wake`
        self.poll = poll_seconds
        self.vendor = getattr(getattr(queue, "store", None), "vendor", None)
        self.reason: str | None = None  # what woke the sleep (set by `wake`)
        self.last: str | None = None  # why the last sleep ended
        self.backoff = 0
        self.hub: Hub | None = None
        self.burst = burst
        self.polled = False  # PostgreSQL without LISTEN (a transaction pool): checks
        self.watch: Watch | None = None  # the process's look for new work, where it checks
        self.checks_from = 0.0  # monotonic: when the watch starts looking for this sleep
        # The current sleep, which the watch may end sooner (lock): its number, whether the
        # watch looks for it, when it ends (monotonic) and as what.
        self.lock = threading.Lock()
        self.sleep_number = 0
        self.sleeping = False
        self.deadline = 0.0
        self.ends_as = POLL

    def __enter__(self) -> Pickup:
        # A burst run ends when its queue is empty: not worth a connection of its own.
        if self.vendor == "postgresql" and not self.burst:
            using = getattr(self.queue, "using", "default")
            self.polled = not can_listen(using)
            if not self.polled:
                self.hub = Hub.of(using)
                listener = self.hub.subscribe(self)
                if not listener.listening.wait(LISTEN_WAIT_SECONDS):
                    logger.warning(
                        "queue %s: not listening for new jobs yet; polling", self.queue_name
                    )
        if self._check_seconds() is not None:
            self.watch = Watch.of(self.queue)
        return self

    def __exit__(self, *exc) -> None:
        if self.hub is not None:
            self.hub.unsubscribe(self)
            self.hub = None
        if self.watch is not None:
            self.watch.unsubscribe()
            self.watch = None

    def wake(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason
        self.event.set()

    def arm(self) -> None:
        """Before each claim: a wake-up from now on ends the next sleep at once."""
        with self.lock:  # after the watch's last word on the sleep that ended (`seen`)
            self.reason = None
            self.event.clear()

    def claimed(self, got: int) -> None:
        if got:
            self.backoff = 0
        elif self.last in (CHANGED, SCHEDULED):
            self.backoff = min(self.backoff + 1, MAX_BACKOFF)

    def sleep(self) -> str:
        """Wait for a reason to claim again; return it."""
        reason = self._sleep()
        logger.debug("queue %s: woken (%s)", self.queue_name, reason)
        self.last = reason
        return reason

    def _sleep(self) -> str:
        start = time.monotonic()
        deadline, reason = start + self.poll, POLL
        # After checks that found nothing to claim, the next check waits longer.
        first = CHECK_SECONDS.get(self.vendor, min(CHECK_SECONDS.values()))
        hold = min(self.poll, first * 2**self.backoff) if self.backoff else 0.0
        every = self._check_seconds()
        check = None if every is None else min(self.poll, max(every, hold))
        window = self._window_in()
        if window is not None:
            # The rate is spent until its next window: a wake before would claim nothing,
            # so neither a check nor a due job ends this sleep (no `next_due` read either).
            # The poll still bounds it (a rate raised meanwhile is seen within it).
            check = None
            if window < self.poll:
                deadline, reason = start + window, RATE
        else:
            due = self._due_in()
            if due is not None and due < self.poll:
                deadline, reason = start + max(due, hold), SCHEDULED
        logger.debug(
            "queue %s: idle, claiming again within %.3gs", self.queue_name, deadline - start
        )
        watched = check is not None and self.watch is not None
        with self.lock:
            self.sleep_number += 1
            self.sleeping = watched
            self.deadline, self.ends_as = deadline, reason
        if watched:
            self.checks_from = start + check
            self.watch.sleep(self, every)
        try:
            return self._wait(window is not None, check)
        finally:
            if watched:
                self.watch.awake(self)
                with self.lock:
                    self.sleeping = False

    def _wait(self, at_rate: bool, check: float | None) -> str:
        while True:
            if self.state.stopping:
                return STOP
            with self.lock:
                deadline, ends_as = self.deadline, self.ends_as
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return ends_as  # (its reason stands: the poll, a scheduled job, the rate)
            if not self.event.wait(remaining):
                continue
            if self.state.stopping:
                return STOP
            woke = self.reason
            if woke is None:
                # The watch moved the deadline: sleep on until then. A wake-up that came
                # meanwhile has its reason set by now, or sets the event again.
                self.event.clear()
                woke = self.reason
                if woke is None:
                    continue
            if at_rate:
                self.arm()  # a NOTIFY before the window opens: nothing to claim yet
                continue
            # Within a check of the scheduled time this sleep waits for, that time has come
            # (the read took that long), not a new job.
            near = check is not None and time.monotonic() >= deadline - check
            if woke == CHANGED and ends_as == SCHEDULED and near:
                return SCHEDULED
            return woke

    def seen(self, due: float, number: int) -> None:
        """What the watch read for sleep `number` of this pickup: its queue's next job is
        due in `due` seconds (<= 0: now). A read for an earlier sleep says nothing."""
        with self.lock:
            if number != self.sleep_number or not self.sleeping:
                return
            if due <= 0:
                self.wake(CHANGED)
                return
            at = time.monotonic() + due
            if at < self.deadline:
                self.deadline, self.ends_as = at, SCHEDULED
                self.event.set()

    def _check_seconds(self) -> float | None:
        """How often to look for a change (None: woken by NOTIFY, or nothing to look at)."""
        if self.polled:
            return POOLED_CHECK_SECONDS
        return CHECK_SECONDS.get(self.vendor)

    def _window_in(self) -> float | None:
        """Seconds until the queue's next rate window opens if the last claim found its
        rate spent (None: it did not; >= 0)."""
        at_rate = getattr(self.queue, "at_rate", None)  # a caller's queue may lack it
        until = at_rate(self.queue_name) if at_rate is not None else None
        if until is None:
            return None
        return max((until - self.queue.now()).total_seconds(), 0.0)

    def _due_in(self) -> float | None:
        """Seconds until the queue's earliest scheduled job is due (<= 0: due now)."""
        next_due = getattr(self.queue, "next_due", None)  # a caller's queue may lack it
        if next_due is None:
            return None
        try:
            due = next_due(self.queue_name)
        except DatabaseError:
            return None
        return None if due is None else (due - self.queue.now()).total_seconds()
