"""The PostgreSQL LISTEN connection of one web process.

A thread, because psycopg's `notifies()` blocks; it owns a dedicated connection (never one of
Django's per-thread connections, which may sit in a transaction: a connection inside a
transaction receives nothing until it ends). Each NOTIFY on `CHANNEL` (sent by the trigger
`install_job_notify` at COMMIT of a change) calls `wake`. After a lost connection it
reconnects and calls `wake` once, since notifications sent meanwhile are lost.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from django.db import connections

logger = logging.getLogger(__name__)

CHANNEL = "hammerweb_jobs"
#: How long one `notifies()` call blocks before the thread checks whether it should stop.
STOP_CHECK_SECONDS = 1.0
RECONNECT_SECONDS = 5.0


class Listener(threading.Thread):
    def __init__(self, wake: Callable[[], None], using: str = "default") -> None:
        super().__init__(name="hammerweb-listen", daemon=True)
        self.wake = wake
        self.using = using
        self.stopping = threading.Event()
        self.listening = threading.Event()  # set once LISTEN is in place (tests wait on it)

    def stop(self) -> None:
        """Ask the thread to end (within STOP_CHECK_SECONDS); does not block."""
        self.stopping.set()

    def run(self) -> None:
        while not self.stopping.is_set():
            wrapper = connections.create_connection(self.using)
            try:
                wrapper.ensure_connection()
                wrapper.set_autocommit(True)
                with wrapper.cursor() as cursor:
                    cursor.execute(f"LISTEN {CHANNEL}")
                if self.listening.is_set():
                    self.wake()  # reconnected: what was sent meanwhile is lost
                self.listening.set()
                while not self.stopping.is_set():
                    for _ in wrapper.connection.notifies(timeout=STOP_CHECK_SECONDS):
                        self.wake()
            except Exception:
                logger.exception("live dashboard: LISTEN connection lost; reconnecting")
                self.stopping.wait(RECONNECT_SECONDS)
            finally:
                wrapper.close()
