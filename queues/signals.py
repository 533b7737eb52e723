"""The lifecycle signals of jobs, for integrations (error trackers, audit logs, metrics):
job_enqueued, job_started, job_succeeded, job_failed, job_reaped, job_cancelled, job_retried
and job_dead. Each is sent once its transition is committed, robustly (a receiver that raises
is logged), and costs nothing while no one listens. The arguments of each are in
docs/design/signals.md."""

from __future__ import annotations

import logging
from datetime import datetime

from django.dispatch import Signal

from queues.enums import AttemptEnd, JobStatus

logger = logging.getLogger("queues.signals")


class JobSignal(Signal):
    """A `Signal` that knows its name (for the log of a receiver that raised), and keeps
    `ends_heard` up to date as receivers connect and disconnect."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name

    def connect(self, *args, **kwargs) -> None:
        super().connect(*args, **kwargs)
        _recount()

    def disconnect(self, *args, **kwargs) -> bool:
        removed = super().disconnect(*args, **kwargs)
        _recount()
        return removed

    def __repr__(self) -> str:
        return f"<JobSignal {self.name}>"


job_enqueued = JobSignal("job_enqueued")
job_started = JobSignal("job_started")
job_succeeded = JobSignal("job_succeeded")
job_failed = JobSignal("job_failed")
job_reaped = JobSignal("job_reaped")
job_cancelled = JobSignal("job_cancelled")
job_retried = JobSignal("job_retried")
job_dead = JobSignal("job_dead")

ALL = (
    job_enqueued, job_started, job_succeeded, job_failed, job_reaped, job_cancelled,
    job_retried, job_dead,
)  # fmt: skip
#: The attempt ends that are the reaper's (a lease expired) or the lifeline's.
_REAPED = (AttemptEnd.LEASE_EXPIRED, AttemptEnd.PROCESS_DIED)


#: Whether a signal a run's end may send has a receiver: read for every job a worker
#: finishes, so one flag instead of six lists (a receiver that was garbage-collected may
#: leave it True until the next connect or disconnect: then a send finds no one).
_ends_heard = False


def _recount() -> None:
    global _ends_heard
    ends = (job_succeeded, job_failed, job_reaped, job_cancelled, job_retried, job_dead)
    _ends_heard = any(signal.receivers for signal in ends)


def send(signal: JobSignal, sender, job, attempt: int | None = None, **arguments) -> None:
    """Send `signal` for `job` now (committed already), robustly: a receiver's error is
    logged, never raised."""
    if not signal.receivers:
        return
    try:
        answers = signal.send_robust(
            sender,
            job=job,
            job_id=job.id,
            queue_name=job.queue_name,
            attempt=job.attempts if attempt is None else attempt,
            **arguments,
        )
    except Exception:  # the arguments' own failure: still nothing for the caller to undo
        logger.exception("sending %s for job %s failed", signal.name, job.id)
        return
    for receiver, answer in answers:
        if isinstance(answer, Exception):
            logger.error(
                "a receiver of %s (%r) raised for job %s",
                signal.name,
                receiver,
                job.id,
                exc_info=answer,
            )


def enqueued(store, sender, jobs) -> None:
    """The jobs were inserted (in the open transaction)."""
    if job_enqueued.receivers and jobs:
        _on_commit_each(store, job_enqueued, sender, list(jobs), {})


def started(store, sender, jobs, worker_id) -> None:
    """A claim took the jobs (their attempt counted)."""
    if job_started.receivers and jobs:
        _on_commit_each(store, job_started, sender, list(jobs), {"worker_id": worker_id})


def _on_commit_each(store, signal, sender, jobs, arguments) -> None:
    # Apart from the callers: a closure's cells would cost them on every call.
    store.on_commit(lambda: [send(signal, sender, job, **arguments) for job in jobs])


def run_ended(store, sender, job, outcome, status, attempt, started_at, now) -> None:
    """The write of `outcome` (the run's end) gave `job` `status` (in the open transaction):
    one of succeeded, failed, reaped or cancelled, then retried or dead if it came to that."""
    if _ends_heard:  # the rest in another function: its closure's cells cost every call
        _on_end(store, sender, job, outcome, status, attempt, _seconds(started_at, now))


def _on_end(store, sender, job, outcome, status, attempt, run_time) -> None:
    store.on_commit(lambda: _send_end(sender, job, outcome, status, attempt, run_time))


def _send_end(sender, job, outcome, status, attempt, run_time) -> None:
    error = outcome.error
    if outcome.kind == "completed":
        send(job_succeeded, sender, job, attempt, run_time=run_time, result=outcome.result)
        return
    if outcome.kind == "retry" and error is None:
        pass  # the handler rescheduled itself: no failure, only the retry
    elif outcome.ended_by in _REAPED:
        send(job_reaped, sender, job, attempt, run_time=run_time, error=error, status=status)
    elif outcome.kind == "cancelled":
        send(job_cancelled, sender, job, attempt, run_time=run_time, error=error, operator=False)
    else:
        send(
            job_failed,
            sender,
            job,
            attempt,
            run_time=run_time,
            error=error,
            exception_class=outcome.exception_class,
            traceback=outcome.traceback,
            status=status,
        )
    next_step(sender, job, status, attempt, error, operator=False)


def next_step(sender, job, status, attempt, error, operator: bool) -> None:
    """After a failed run or an operator's action: retried when Pending again, dead when
    Dead (sent now: the caller is after the commit)."""
    if status == JobStatus.PENDING:
        send(job_retried, sender, job, attempt, run_at=job.scheduled_at, error=error,
             operator=operator)  # fmt: skip
    elif status == JobStatus.DEAD:
        send(job_dead, sender, job, attempt, error=error, operator=operator)


def operator_acted(store, sender, job, status, attempt, started_at, now) -> None:
    """An operator cancelled, marked dead or retried `job` (in the open transaction); `job`
    holds the values written."""
    if not (job_cancelled.receivers or job_retried.receivers or job_dead.receivers):
        return
    run_time = _seconds(started_at, now)

    def announce() -> None:
        if status == JobStatus.FAILED:
            error = job.error_message
            send(job_cancelled, sender, job, attempt, run_time=run_time, error=error,
                 operator=True)  # fmt: skip
        else:
            error = job.error_message if status == JobStatus.DEAD else None
            next_step(sender, job, status, attempt, error, operator=True)

    store.on_commit(announce)


def _seconds(started_at: datetime | None, now: datetime) -> float | None:
    return None if started_at is None else max((now - started_at).total_seconds(), 0.0)
