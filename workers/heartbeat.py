"""The heartbeat of a worker run: every third of the lease, one `heartbeat_jobs` call
extends the lease of every job the run holds or runs (one statement per claim)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import timedelta

from django.db import connection

from .faults import GaveUp, retrying

logger = logging.getLogger("workers")
#: The shortest heartbeat interval, whatever the lease.
MIN_INTERVAL = 0.1


def interval_for(lease: timedelta) -> float:
    return max(lease.total_seconds() / 3, MIN_INTERVAL)


def beat_until(
    finished: threading.Event,
    queue,
    lease: timedelta,
    jobs: Callable[[], list],
) -> None:
    """Heartbeat `jobs()` until `finished` is set. Runs in its own thread."""
    try:
        while not finished.wait(interval_for(lease)):
            current = jobs()
            if not current:
                continue
            try:
                retrying(
                    lambda current=current: queue.heartbeat_jobs(current, lease),
                    what="extending leases",
                    using=getattr(queue, "using", "default"),
                    give_up=finished,
                )
            except GaveUp:
                return
            except Exception:  # a bug must not stop the beats of the other jobs for good
                logger.exception("heartbeat failed")
    finally:
        connection.close()
