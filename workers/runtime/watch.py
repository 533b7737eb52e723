"""How the idle claimers of one process notice new work where no NOTIFY reaches them
(SQLite, MariaDB and MySQL, PostgreSQL through a transaction-mode pooler): one thread for
the process and database looks every check interval on behalf of every sleeping claimer,
with one `next_due_many` statement for all their queues (on SQLite only when
`data_version` says another connection committed), instead of one look a queue. See
docs/design/worker.md."""

from __future__ import annotations

import logging
import threading
import time

from django.db import connections

from workers.runtime.faults import DB_FAULTS, MAX_DELAY, close_connection

logger = logging.getLogger("workers")

#: How long closing waits for the thread (it is between two looks, or in one).
CLOSE_WAIT_SECONDS = 5.0
#: The most doublings of the wait between looks after failed ones (up to MAX_DELAY).
MAX_DOUBLINGS = 7


class Watch:
    """The sleepers of one process and database, and the thread that looks for them. Its
    thread starts with the first sleeper and ends when the last subscriber leaves."""

    _watches: dict[str, Watch] = {}
    _watches_lock = threading.Lock()

    def __init__(self, queue) -> None:
        self.queue = queue  # any queue object of the database: they read the same tables
        self.using = getattr(queue, "using", "default")
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)  # a sleeper came, or closing
        self.subscribers = 0
        #: {pickup: (its sleep's number, the data_version its queue was last read at for
        #: that sleep: None, not read yet)}.
        self.sleepers: dict = {}
        self.thread: threading.Thread | None = None
        self.closing = False
        self.interval: float | None = None

    @classmethod
    def of(cls, queue) -> Watch:
        using = getattr(queue, "using", "default")
        with cls._watches_lock:
            watch = cls._watches.get(using)
            if watch is None:
                watch = cls._watches[using] = cls(queue)
            watch.subscribers += 1
            return watch

    def unsubscribe(self) -> None:
        with Watch._watches_lock:
            self.subscribers -= 1
            if self.subscribers:
                return
            Watch._watches.pop(self.using, None)
        with self.lock:
            self.closing = True
            thread = self.thread
            self.changed.notify_all()
        if thread is not None:
            thread.join(CLOSE_WAIT_SECONDS)
            if thread.is_alive():
                logger.warning("the look for new work of %s did not end in time", self.using)

    def sleep(self, pickup, every: float) -> None:
        """`pickup` sleeps (its sleep number `pickup.sleep_number`): look for its queue every
        `every` seconds, from its `checks_from` on, until `awake(pickup)`."""
        with self.lock:
            first = not self.sleepers
            self.sleepers[pickup] = (pickup.sleep_number, None)
            self.interval = every if self.interval is None else min(self.interval, every)
            if self.thread is None and not self.closing:
                self.thread = threading.Thread(target=self._run, name="watch-new-work")
                self.thread.daemon = True  # a look that waits for the database ends with us
                self.thread.start()
            if first:  # the thread waits for a sleeper; else it keeps its interval
                self.changed.notify_all()

    def awake(self, pickup) -> None:
        with self.lock:
            self.sleepers.pop(pickup, None)

    def _run(self) -> None:
        failures = 0
        try:
            while True:
                with self.lock:
                    while not self.sleepers and not self.closing:
                        self.changed.wait()
                    if self.closing:
                        return
                    # After failed looks, fewer: a database that is away is not asked 20
                    # times a second (the claims' retries report the outage).
                    self.changed.wait(min(self.interval * 2**failures, MAX_DELAY))
                    if self.closing:
                        return
                try:
                    self.look()
                except Exception as exc:  # noqa: BLE001 (the thread outlives any look)
                    failures = min(failures + 1, MAX_DOUBLINGS)
                    if isinstance(exc, DB_FAULTS):
                        close_connection(self.using)  # the next look opens a new one
                        logger.debug("looking for new work failed: %s", exc)
                    else:  # a bug: the polls still find new work meanwhile
                        logger.exception("looking for new work failed")
                    continue
                if failures:
                    logger.debug("looking for new work again")
                failures = 0
        finally:
            connections.close_all()  # this thread's
            with self.lock:
                if self.thread is threading.current_thread():
                    self.thread = None

    def look(self) -> None:
        """One look for every sleeper whose checks have begun: its queue's next due job,
        read for all in one statement (a few on many queues). A sleeper whose job is due is
        woken; one whose job is due before its sleep ends sleeps until then. On SQLite the
        read is skipped while no other connection committed since this sleeper's last."""
        now = time.monotonic()
        with self.lock:
            due_now = {p: mark for p, mark in self.sleepers.items() if now >= p.checks_from}
        if not due_now:
            return
        version = self.queue.data_version()
        names = {
            p.queue_name for p, (_, seen) in due_now.items() if version is None or seen != version
        }
        if not names:
            return
        dues = self.queue.next_due_many(sorted(names))
        with self.lock:
            for pickup, (number, _) in due_now.items():
                if pickup.queue_name in names and self.sleepers.get(pickup, (None,))[0] == number:
                    self.sleepers[pickup] = (number, version)
        for pickup, (number, _) in due_now.items():
            due = dues.get(pickup.queue_name)
            if due is not None:
                # The pickup's own clock: its queue's (a test's may be a MockClock).
                pickup.seen((due - pickup.queue.now()).total_seconds(), number)
