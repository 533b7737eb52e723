"""Database faults: a dropped connection or a restarting server is logged and the call is
retried with backoff, on a fresh connection, until it works or the caller gives up. Only
connection-level errors are retried; the engine's fenced writes make a repeat harmless.
See docs/design/worker.md."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from django.db import InterfaceError, OperationalError, connections

logger = logging.getLogger("workers")

DB_FAULTS = (OperationalError, InterfaceError)
FIRST_DELAY = 0.05
MAX_DELAY = 5.0


class GaveUp(Exception):
    """The database stayed unreachable until the caller stopped waiting for it."""


def close_connection(using: str = "default") -> None:
    """Drop this thread's connection, broken or not; the next query opens a new one."""
    try:
        connections[using].close()
    except Exception:  # closing a dead connection can fail in its own way; it is gone anyway
        logger.debug("closing a broken connection failed", exc_info=True)


def retrying[T](
    fn: Callable[[], T],
    *,
    what: str,
    using: str = "default",
    give_up: threading.Event | None = None,
) -> T:
    """Call `fn` until it gets past connection faults; `GaveUp` once `give_up` is set."""
    delay = FIRST_DELAY
    failures = 0
    while True:
        try:
            result = fn()
        except DB_FAULTS as exc:
            failures += 1
            close_connection(using)
            log = logger.warning if failures in (1, 10) or failures % 50 == 0 else logger.debug
            log("database fault while %s (%s); retrying in %.2fs", what, exc, delay)
            waiter = give_up or threading.Event()
            if waiter.wait(delay):
                raise GaveUp(what) from exc
            delay = min(delay * 2, MAX_DELAY)
            continue
        if failures:
            logger.warning("database is back after %d failed attempts at %s", failures, what)
        return result
