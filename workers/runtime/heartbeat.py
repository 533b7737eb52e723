"""The heartbeat of a worker run, in its own thread: every third of the lease it extends the
lease of every held or running job, and between beats it asks (every `check_interval`)
which running jobs' runs are no longer this worker's, so that their handlers are asked to
stop. See docs/design/worker.md."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import timedelta

from django.db import connection

from workers import defaults
from workers.runtime.faults import DB_FAULTS, GaveUp, close_connection, retrying

logger = logging.getLogger("workers")
#: The shortest heartbeat interval, whatever the lease.
MIN_INTERVAL = 0.1


def interval_for(lease: timedelta) -> float:
    return max(lease.total_seconds() / 3, MIN_INTERVAL)


class Heartbeat:
    """Beats for `in_flight()` (held and running jobs) and checks `running()`; calls
    `on_lost(job)` for each running job whose run was taken away."""

    clock = staticmethod(time.monotonic)  # a test's clock can stand in

    def __init__(
        self,
        queue,
        lease: timedelta,
        in_flight: Callable[[], list],
        running: Callable[[], list],
        on_lost: Callable,
        check_interval: timedelta | None = defaults.CANCEL_CHECK_INTERVAL,
    ) -> None:
        self.queue = queue
        self.lease = lease
        self.in_flight = in_flight
        self.running = running
        self.on_lost = on_lost
        self.beat_interval = interval_for(lease)
        # None: the checks are the beats' own (a beat that misses a run looks for it).
        checks = check_interval.total_seconds() if check_interval else self.beat_interval
        self.check_interval = max(min(checks, self.beat_interval), MIN_INTERVAL)

    def run(self, finished: threading.Event) -> None:
        """Beat and check until `finished` is set. Each wait ends at the next beat or check,
        whichever comes first: the beats stay a third of the lease apart."""
        next_beat = next_check = self.clock()
        next_beat += self.beat_interval
        next_check += self.check_interval
        try:
            while not finished.wait(max(0.0, min(next_beat, next_check) - self.clock())):
                now = self.clock()
                if now >= next_beat:
                    next_beat = now + self.beat_interval
                    beaten = self._beat(finished)
                    if beaten is None:
                        return  # gave up: the run is finished
                    if beaten:  # every run was still this worker's: a check too
                        next_check = now + self.check_interval
                        continue
                    next_check = now  # one was not: find it now
                if now >= next_check:
                    next_check = now + self.check_interval
                    self._check()
        finally:
            connection.close()

    def _beat(self, finished: threading.Event) -> bool | None:
        """Extend the leases: whether every run was still this worker's (None: gave up)."""
        current = self.in_flight()
        if not current:
            return True
        try:
            extended = retrying(
                lambda: self.queue.heartbeat_jobs(current, self.lease),
                what="extending leases",
                using=getattr(self.queue, "using", "default"),
                give_up=finished,
            )
        except GaveUp:
            return None
        except Exception:  # a bug must not stop the beats of the other jobs for good
            logger.exception("heartbeat failed")
            return True
        return extended == len(current)

    def _check(self) -> None:
        running = self.running()
        if not running:
            return
        try:
            lost = self.queue.lost_runs(running)
        except DB_FAULTS:
            # The database is away: the next check (or beat, which waits for it) asks again.
            logger.debug("checking for lost runs failed", exc_info=True)
            close_connection(getattr(self.queue, "using", "default"))
            return
        except Exception:
            logger.exception("checking for lost runs failed")
            return
        if not lost:
            return
        # Only the jobs still running after the read: one whose outcome was written meanwhile
        # reads as not Running, yet its run ended here, not elsewhere (without this, a busy
        # worker asked finished jobs to stop and logged a line for each).
        still = {job.id for job in self.running()}
        for job in running:
            if job.id in lost and job.id in still:
                self.on_lost(job)
