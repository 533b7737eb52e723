"""The error history's rules: which ends of a run write a `FailedAttempt` row, and what it
holds. Every run that ends without completing writes one (a failure, a time-out, a rescue,
an operator's action on a Running job); the queue writes the rows through its store, in the
transaction of the write that ends the attempt. See docs/design/tables.md."""

from __future__ import annotations

import os
import socket
from datetime import datetime

from queues.enums import AttemptEnd, JobStatus
from queues.models import FailedAttempt
from queues.text import storable_label

#: The ends of a run that its own worker records (the writer is the process that ran it).
_BY_THE_RUNNER = (AttemptEnd.ERROR, AttemptEnd.TIMEOUT)
_label: tuple[int, str] | None = None


def this_process() -> str:
    """This process as "host:pid" (found again after a fork)."""
    global _label
    pid = os.getpid()
    if _label is None or _label[0] != pid:
        _label = (pid, storable_label(f"{socket.gethostname()}:{pid}"))
    return _label[1]


def ended_by(outcome) -> str | None:
    """What ended the attempt that `outcome` records, or None if it is no failure."""
    if outcome.kind == "completed" or (outcome.kind == "retry" and outcome.error is None):
        return None
    if outcome.ended_by is not None:
        return outcome.ended_by
    if outcome.kind == "timed_out":
        return AttemptEnd.TIMEOUT
    if outcome.kind == "cancelled":
        return AttemptEnd.CANCELLED
    return AttemptEnd.ERROR


def outcome_row(job, outcome, status: str, now: datetime) -> FailedAttempt | None:
    """The row that records the end of `job`'s run (still Running: built before the write
    clears the run) with `outcome`, after which the job is `status`; None for no failure."""
    end = ended_by(outcome)
    if end is None:
        return None
    error, traceback = outcome.error, outcome.traceback
    if error and traceback and error.endswith(traceback):
        # A task's error is its summary and its traceback (`tasks.results.format_error`);
        # the row keeps the traceback once.
        error = error[: -len(traceback)].rstrip()
    return _row(job, end, status, now, error, outcome.exception_class, traceback)


def operator_row(job, end: str, status: str, reason: str | None, now: datetime):
    """The row of an operator's action that ends the run of `job` (cancel, mark dead,
    retry), or None if `job` is not Running (no attempt ended)."""
    if job.status != JobStatus.RUNNING:
        return None
    return _row(job, end, status, now, reason, None, None)


def _row(job, end: str, status: str, now, error, exception_class, traceback):
    return FailedAttempt(
        job_id=job.id,
        attempt=job.attempts,
        started_at=job.started_at,
        failed_at=now,
        ended_by=end,
        status=status,
        error=error,
        exception_class=exception_class,
        traceback=traceback,
        # The rescues and the operators' actions are written by another process than the
        # one that ran the handler: its claim's WorkerProcess tells which one it was.
        worker=this_process() if end in _BY_THE_RUNNER else None,
        worker_process=job.claimed_by,
        run_token=job.run_token,
    )
