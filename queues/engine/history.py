"""The error history: its table (`FailedAttempt`, one row per failed attempt), and which
ends of a run write a row and what it holds. The rules only; the queue writes the rows
through its store, in the transaction of the write that ends the attempt (one INSERT for
every failure of a write).

A row is written for every run that ends without completing: the handler's failure or
time-out (`JobOutcome.failed`, `.dead`, `.timed_out`, `.retry` with an error), the reaper's
and the lifeline's rescues, a fail-fast batch's cancellation, and an operator's cancel, mark
dead or retry of a Running job. A retry without an error (a handler that reschedules itself)
did not fail and writes none; nor does a completion, or an operator's action on a job that
is not running (no attempt ended).
"""

from __future__ import annotations

import os
import socket
from datetime import datetime, timedelta

from django.db import models

from queues.enums import AttemptEnd, HandlerEnd, JobStatus
from queues.text import storable_label


class FailedAttempt(models.Model):
    """One failed attempt of a job, in the error history: what ended it and when, the
    worker that ran it, the error, the exception's class and its traceback. Written in the
    transaction that ends the attempt (one INSERT for all the failures of a write), deleted
    with its job and pruned with the finished jobs. A table rather than a list on the job:
    a claim returns the job's row, which then would carry every earlier traceback."""

    job = models.ForeignKey("queues.Job", on_delete=models.CASCADE, related_name="failed_attempts")
    attempt = models.PositiveIntegerField()
    failed_at = models.DateTimeField()
    ended_by = models.CharField(max_length=16, choices=AttemptEnd.choices)
    #: The job's status once the attempt ended (Pending: it is retried).
    status = models.CharField(max_length=16, choices=JobStatus.choices)
    error = models.TextField(null=True, blank=True)
    exception_class = models.CharField(max_length=255, null=True, blank=True)
    traceback = models.TextField(null=True, blank=True)
    #: The process that ran the handler ("host:pid"), when the writer of the row knew it.
    worker = models.CharField(max_length=255, null=True, blank=True)
    #: The claim's `WorkerProcess` id (`Job.claimed_by`).
    worker_process = models.UUIDField(null=True, blank=True)
    #: The run the attempt was: a worker whose run was taken away notes on this row how
    #: its handler ended.
    run_token = models.UUIDField(null=True, blank=True)
    handler_end = models.CharField(max_length=8, choices=HandlerEnd.choices, null=True, blank=True)
    handler_ended_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["job", "id"]
        # The pruner deletes old rows (a recurring job's history grows without its job
        # ever being pruned).
        indexes = [models.Index(fields=["failed_at"], name="failed_attempt_failed_at")]

    def __str__(self) -> str:
        return f"{self.job_id} attempt {self.attempt} ({self.get_ended_by_display()})"

    @property
    def handler_took(self):
        """How long after the attempt ended its handler did (see `handler_end`), or None."""
        if self.handler_ended_at is None:
            return None
        return max(self.handler_ended_at - self.failed_at, timedelta(0))


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
        # A task's error is its summary and its traceback (`tasks_backend.format_error`);
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
