"""Maintenance services, through the queue's store: the reaper takes back jobs whose lease
expired, the lifeline the jobs of a worker process that died, and the pruner deletes what
finished long ago and the bookkeeping rows, in bounded batches. `runworker` runs them; they
run on a `TestQueue` too. See docs/design/maintenance.md."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from uuid import UUID

from django.db.models import Q, QuerySet

from queues import conf
from queues.engine.outcomes import StaleJobRecovery, reaper_outcome
from queues.enums import FAILURE_STATUSES, AttemptEnd, JobStatus
from queues.models import Job
from queues.reads.stats import SPARK_MINUTES
from queues.store.base import Match
from queues.store.counters import completions

DEFAULT_REAPER_INTERVAL = timedelta(seconds=60)
DEFAULT_PRUNE_INTERVAL = timedelta(minutes=10)
DEFAULT_PRUNE_AFTER = timedelta(days=7)
#: A worker process row without a heartbeat for this long belongs to a dead process.
DEFAULT_DEAD_WORKER_AFTER = timedelta(minutes=10)
DEFAULT_PRUNE_BATCH = 1000
#: At most this many jobs archived per pass: a backlog (the setting just turned on) drains
#: over several passes, and the pass does not hold up the reaper that shares its thread.
ARCHIVE_PER_PASS = 100_000
#: `Pruner`'s archive settings when not given: the project's HAMMERWEB's.
FROM_SETTINGS = object()
#: The minutes the dashboard's throughput reads: its full minutes and the open one.
THROUGHPUT_WINDOW = timedelta(minutes=SPARK_MINUTES + 1)


def _positive(value: timedelta, name: str) -> timedelta:
    if not isinstance(value, timedelta) or value <= timedelta(0):
        raise ValueError(f"{name} must be a positive timedelta, not {value!r}")
    return value


class Reaper:
    """Runs `requeue_stale_jobs` for every queue; concurrent reapers are safe (the engine
    locks expired rows with SKIP LOCKED)."""

    def __init__(self, queue, interval: timedelta = DEFAULT_REAPER_INTERVAL, ran_by: str = ""):
        self.queue = queue
        self.interval = _positive(interval, "interval")
        self.ran_by = ran_by

    def run_once(self) -> StaleJobRecovery:
        return self.queue.requeue_stale_jobs(None, ran_by=self.ran_by)


class Lifeline:
    """Hands back at once the Running jobs of a worker process that ended (a child whose
    supervisor saw it die), instead of waiting for their leases to expire: what the reaper
    does with an expired lease, with an error that says the process died. A job whose
    handler kills its process is so tried `max_attempts` times, then Dead, not restarted in
    a loop. Every job the process held counts that attempt, started or not, as with the
    reaper: nothing tells them apart once the process is gone. Records a `ReaperRun`."""

    def __init__(self, queue, ran_by: str = ""):
        self.queue = queue
        self.ran_by = ran_by

    def hand_back(self, process_id: UUID, error: str) -> StaleJobRecovery:
        """The jobs claimed by `process_id` and still Running: Pending again at once (their
        attempt counted), or Dead when their attempts are used up; `error` says why."""
        recovery = StaleJobRecovery()
        running = self.queue.store.find_jobs(Match(status=JobStatus.RUNNING, claimed_by=process_id))
        for job in sorted(running, key=lambda job: (job.lease_expires_at, str(job.id))):
            # Each job in its own transaction, fenced by the run read here: one the process
            # finished, or the reaper took, meanwhile is left as it is.
            outcome = replace(
                reaper_outcome(job, self.queue.now(), AttemptEnd.PROCESS_DIED), error=error
            )
            recorded = self.queue.finish_job_run(job, outcome)
            if recorded is not None:
                recovery.note(job.id, recorded)
        if recovery.requeued or recovery.dead:
            self.queue.store.insert_reaper_run(recovery.row(self.queue.now(), self.ran_by, None))
        return recovery


@dataclass
class PruneResult:
    jobs: int = 0
    reaper_runs: int = 0
    worker_processes: int = 0
    completion_counts: int = 0
    #: The failed attempts' per-minute counters (`queues.store.counters.attempt_counts`), pruned
    #: with the completions' minutes.
    attempt_counts: int = 0
    #: Hourly history rows written by the roll-up, and deleted as old as the pruned jobs.
    hours_rolled: int = 0
    hourly_counts: int = 0
    #: History rows older than the cutoff whose job is kept (a recurring job's); the rows of
    #: the pruned jobs go with them.
    failed_attempts: int = 0
    #: Jobs moved to the archive (HAMMERWEB["ARCHIVE_AFTER"]), before any is deleted.
    archived: int = 0


class Pruner:
    """Deletes what finished longer than `older_than` ago (with None, finished jobs, reaper
    runs and the error history are kept for ever), and always the bookkeeping rows: dead
    worker processes and the completion and attempt counts of minutes older than
    `completions_kept`, which the triggers add every minute and nothing else removes.
    `batch_size` rows at a time, so that no statement locks or deletes an unbounded number
    of rows. The counters are the SQL store's alone (triggers keep them): on a `TestQueue`
    their counts stay 0. With `archive_after` (default: HAMMERWEB["ARCHIVE_AFTER"]) it first
    moves the jobs that finished longer ago than that to the archive (`archive_jobs`),
    `archive_batch` a transaction, `ARCHIVE_PER_PASS` at most a pass."""

    def __init__(
        self,
        queue,
        older_than: timedelta | None = DEFAULT_PRUNE_AFTER,
        interval: timedelta = DEFAULT_PRUNE_INTERVAL,
        batch_size: int = DEFAULT_PRUNE_BATCH,
        dead_worker_after: timedelta = DEFAULT_DEAD_WORKER_AFTER,
        completions_kept: timedelta = completions.KEPT,
        archive_after: timedelta | None = FROM_SETTINGS,  # type: ignore[assignment]
        archive_batch: int = FROM_SETTINGS,  # type: ignore[assignment]
    ):
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError("batch_size must be a whole number above 0")
        if archive_after is FROM_SETTINGS:
            archive_after = conf.get("ARCHIVE_AFTER")
        if archive_batch is FROM_SETTINGS:
            archive_batch = conf.get("ARCHIVE_BATCH")
        if (
            isinstance(archive_batch, bool)
            or not isinstance(archive_batch, int)
            or archive_batch < 1
        ):
            raise ValueError("archive_batch must be a whole number above 0")
        self.archive_after = (
            None if archive_after is None else _positive(archive_after, "archive_after")
        )
        self.archive_batch = archive_batch
        self.queue = queue
        self.older_than = None if older_than is None else _positive(older_than, "older_than")
        self.interval = _positive(interval, "interval")
        self.batch_size = batch_size
        self.dead_worker_after = _positive(dead_worker_after, "dead_worker_after")
        if _positive(completions_kept, "completions_kept") < THROUGHPUT_WINDOW:
            raise ValueError(f"completions_kept must cover the throughput's {THROUGHPUT_WINDOW}")
        self.completions_kept = completions_kept

    def run_once(self) -> PruneResult:
        now = self.queue.now()
        store = self.queue.store
        minute = completions.minute_of(now - self.completions_kept)
        result = PruneResult(
            # Before the minutes go: the hours they make up are rolled up first.
            hours_rolled=store.roll_up_counts(now, self.completions_kept),
            worker_processes=self._prune("worker_processes", now - self.dead_worker_after),
            completion_counts=self._prune("completion_counts", minute),
            attempt_counts=self._prune("attempt_counts", minute),
        )
        if self.archive_after is not None:
            # First: what the archive keeps is not the pruner's to delete (unless older_than
            # is the shorter).
            result.archived = self.queue.archive_jobs(
                self.archive_after, limit=ARCHIVE_PER_PASS, batch_size=self.archive_batch
            )
        if self.older_than is not None:
            cutoff = now - self.older_than
            old = FinishedBefore(cutoff)
            result.jobs = self._batches(lambda: store.delete_selected(old, self.batch_size))
            result.reaper_runs = self._prune("reaper_runs", cutoff)
            result.hourly_counts = self._prune("hourly_counts", cutoff)
            result.failed_attempts = self._prune("failed_attempts", cutoff)
        return result

    def _prune(self, table: str, before: datetime) -> int:
        store = self.queue.store
        return self._batches(lambda: store.prune_rows(table, before, self.batch_size))

    def _batches(self, delete) -> int:
        """Call `delete` (one batch, of `batch_size` rows at most) until a batch falls short."""
        total = 0
        while True:
            deleted = delete()
            total += deleted
            if deleted < self.batch_size:
                return total


class FinishedBefore:
    """The jobs the pruner deletes (a `Selection`): Completed before `cutoff` by completed_at;
    Failed, Dead or TimedOut before it by failed_at."""

    def __init__(self, cutoff: datetime) -> None:
        self.cutoff = cutoff

    def rows(self, using: str) -> QuerySet:
        return Job.objects.using(using).filter(
            Q(status=JobStatus.COMPLETED, completed_at__lt=self.cutoff)
            | Q(status__in=sorted(FAILURE_STATUSES), failed_at__lt=self.cutoff)
        )

    def matches(self, job: Job) -> bool:
        if job.status == JobStatus.COMPLETED:
            end = job.completed_at
        else:
            end = job.failed_at if job.status in FAILURE_STATUSES else None
        return end is not None and end < self.cutoff
