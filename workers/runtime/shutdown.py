"""The end of a worker run: held jobs that have not started go back to Pending at once
(attempt not counted); running ones get the grace period to finish, which `force` cuts
short. See docs/design/worker.md."""

from __future__ import annotations

import logging
import threading
import time

from workers.runtime.allowance import Allowance
from workers.runtime.faults import GaveUp, retrying
from workers.runtime.state import RunState

logger = logging.getLogger("workers")


def shut_down(worker, state: RunState, allowance: Allowance, force: threading.Event) -> None:
    state.set_stopping()
    release_unstarted(worker, state, allowance, force)
    wait_for_running(worker, state, force)


def release_unstarted(worker, state: RunState, allowance: Allowance, force) -> None:
    queue = worker.queue
    unstarted = state.unhold_all()
    for job in unstarted:
        try:
            retrying(
                lambda job=job: queue.release_job_run(job),
                what=f"releasing job {job.id}",
                using=getattr(queue, "using", "default"),
                give_up=force,
            )
        except GaveUp:
            pass  # still Running: the reaper takes it back after its lease
        allowance.not_run(1)
    if unstarted:
        logger.info("released %d unstarted jobs of %s", len(unstarted), worker.queue_name)


def wait_for_running(worker, state: RunState, force: threading.Event) -> None:
    deadline = time.monotonic() + worker.shutdown_grace_period.total_seconds()
    with state.lock:
        while state.running and not force.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                break
            state.room.wait(min(left, 0.1))
        if state.running:
            logger.warning(
                "%d jobs of %s still running at exit; their leases will expire",
                len(state.running),
                worker.queue_name,
            )
