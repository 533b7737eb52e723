"""A PostgreSQL LISTEN connection of one process, on a thread of its own and a dedicated
connection: the live dashboard's aggregator listens on `CHANNEL`, idle workers on theirs
(workers/runtime/pickup.py). Each NOTIFY calls `notified(payload)`; after a lost connection
it reconnects and calls `reconnected()`. Through a transaction-mode pooler nothing listens
(`can_listen`): the callers poll instead. See docs/design/store.md."""

from __future__ import annotations

import logging
import os
import select
import threading
from collections.abc import Callable

from django.db import DatabaseError, connections

from queues.store.sql.session import transaction_pooled

logger = logging.getLogger(__name__)

CHANNEL = "hammerweb_jobs"
#: How long one `notifies()` call blocks before the thread checks whether it should stop.
STOP_CHECK_SECONDS = 1.0
#: The pause before the first reconnection, doubled after each failed one up to the maximum.
RECONNECT_FIRST_SECONDS = 0.1
RECONNECT_SECONDS = 5.0


def can_listen(using: str = "default") -> bool:
    """Whether a LISTEN on `using` hears its NOTIFYs: PostgreSQL, not through a
    transaction-mode pooler (there the LISTEN stays on a pooled server session, which the
    next client gets). A database that does not answer yet: assumed so (the Listener
    looks again when it connects)."""
    connection = connections[using]
    if connection.vendor != "postgresql":
        return False
    try:
        return not transaction_pooled(connection)
    except DatabaseError:
        return True


class Listener(threading.Thread):
    def __init__(
        self,
        wake: Callable[[], None],
        using: str = "default",
        channel: str = CHANNEL,
        name: str = "hammerweb-listen",
    ) -> None:
        super().__init__(name=name, daemon=True)
        self.wake = wake
        self.using = using
        self.channel = channel
        self.stopping = threading.Event()
        self.listening = threading.Event()  # set once LISTEN is in place (tests wait on it)
        self.backend_pid: int | None = None  # of the listening connection (tests kill it)
        # Written by `stop`, so that a thread waiting for its socket ends at once.
        self._interrupt_r, self._interrupt_w = os.pipe()
        self._pipe_lock = threading.Lock()  # `stop` never writes to a closed (reused) fd
        self._pipe_open = True

    def stop(self) -> None:
        """Ask the thread to end (at once: its wait is interrupted); does not block."""
        self.stopping.set()
        with self._pipe_lock:
            if self._pipe_open:
                os.write(self._interrupt_w, b"x")

    def notified(self, payload: str) -> None:
        self.wake()

    def reconnected(self) -> None:
        self.wake()  # what was sent while the connection was down is lost

    def run(self) -> None:
        try:
            self._listen()
        finally:
            with self._pipe_lock:
                self._pipe_open = False
                os.close(self._interrupt_r)
                os.close(self._interrupt_w)

    def _listen(self) -> None:
        pause = RECONNECT_FIRST_SECONDS
        while not self.stopping.is_set():
            wrapper = connections.create_connection(self.using)
            try:
                wrapper.ensure_connection()
                if transaction_pooled(wrapper):
                    logger.info("%s: not listening through a transaction pool", self.name)
                    return
                wrapper.set_autocommit(True)
                with wrapper.cursor() as cursor:
                    # Named, so that an operator (or a test) can find it in pg_stat_activity.
                    cursor.execute("SELECT set_config('application_name', %s, false)", [self.name])
                    cursor.execute(f"LISTEN {self.channel}")
                self.backend_pid = wrapper.connection.info.backend_pid
                if self.listening.is_set():
                    self.reconnected()
                self.listening.set()
                pause = RECONNECT_FIRST_SECONDS
                connection = wrapper.connection
                watched = [connection.fileno(), self._interrupt_r]
                while not self.stopping.is_set():
                    # Wait on the socket ourselves: `notifies()` holds the connection's lock
                    # while it blocks, and `stop` must not wait for it. A lost connection
                    # makes the socket readable and `notifies` raise.
                    ready, _, _ = select.select(watched, [], [], STOP_CHECK_SECONDS)
                    if watched[0] in ready:
                        for notify in connection.notifies(timeout=0):
                            self.notified(notify.payload)
            except Exception:
                logger.warning(
                    "%s: LISTEN connection lost; reconnecting in %.1fs",
                    self.name,
                    pause,
                    exc_info=True,
                )
                self.stopping.wait(pause)
                pause = min(pause * 2, RECONNECT_SECONDS)
            finally:
                wrapper.close()
