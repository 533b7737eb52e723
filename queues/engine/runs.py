"""The writes of runs (`Runs`, mixed into `JobQueue`): a worker's heartbeats, start markers
and outcomes, and the reaper's rescue of expired leases. Every write is fenced by the run's
token: a reaped, released or operator-retried run writes nothing and is told so. The hot
path, `finish_and_start_runs`, is one transaction: see docs/design/engine.md ("Runs").
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from datetime import UTC, datetime, timedelta
from uuid import UUID

from queues import signals
from queues.engine import effects, history
from queues.engine.core import QueuePart
from queues.engine.outcome_batches import complete_free, record_outcomes
from queues.engine.outcomes import (
    JobOutcome,
    RecordedOutcome,
    StaleJobRecovery,
    check_outcome,
    plan_outcome,
    reaper_outcome,
)
from queues.groups import BATCH_FAILED, batch_failed_error
from queues.models import FailedAttempt, Job
from queues.store import Match
from queues.validation import positive_lease, validate_queue_name

#: What `start_claimed_run` did with a held job.
STARTED, LOST, RELEASED, CANCELLED = "started", "lost", "released", "cancelled"
#: How many expired leases the reaper takes back in one transaction.
REAPER_BATCH = 500


class Runs(QueuePart):
    """`JobQueue`'s writes of runs."""

    def heartbeat_job(self, job: Job, lease: timedelta) -> bool:
        if job.run_token is None:
            return False
        now = self.now()
        expires = now + positive_lease(lease)
        fields = {"lease_expires_at": expires, "last_heartbeat_at": now}
        if not self.store.update_runs([job.id], job.run_token, fields):
            return False
        job.lease_expires_at, job.last_heartbeat_at = expires, now
        return True

    def heartbeat_jobs(self, jobs: Sequence[Job], lease: timedelta) -> int:
        """Extend the leases of many runs in one statement per claim; returns how many
        were still this worker's."""
        now = self.now()
        fields = {"lease_expires_at": now + positive_lease(lease), "last_heartbeat_at": now}
        return sum(self.store.update_runs(ids, token, fields) for token, ids in _by_claim(jobs))

    def lost_runs(self, jobs: Sequence[Job]) -> set[UUID]:
        """The ids of those of `jobs` whose run is no longer theirs: cancelled, marked dead,
        retried or released by an operator, or taken back by the reaper (one read, for
        every claim). A worker asks it to stop their handlers."""
        mine = [job for job in jobs if job.run_token is not None]
        if not mine:
            return set()
        running = self.store.running_tokens([job.id for job in mine])
        return {job.id for job in mine if running.get(job.id) != job.run_token}

    def record_handler_end(self, job: Job, end: str) -> bool:
        """After `job`'s run was taken from its worker: note on the history row of that run
        (its cancel, retry or rescue) how the handler ended (`HandlerEnd`: it stopped, or
        was cut off at its timeout), and that this process ran it. False if the run has
        no such row (it was released)."""
        if job.run_token is None:
            return False
        fields = {
            "handler_end": end,
            "handler_ended_at": self.now(),
            "worker": history.this_process(),
        }
        return bool(self.store.update_attempt(job.id, job.run_token, fields))

    def release_job_run(self, job: Job) -> bool:
        """Hand an unstarted claimed job back: Pending, attempt taken back, start cleared."""
        if job.run_token is None:
            return False
        return bool(self.store.release_runs([job.id], job.run_token))

    def may_start(self, jobs: Collection[Job]) -> set[UUID]:
        """Which held jobs may start without a start marker: their run is still this
        worker's, their queue is not paused and their fail-fast batch (if any) has not
        failed. One read, no write: a worker that asks it just after the claim keeps the
        claim's start time; for the others it is the start marker's to say (and to fail the
        held job of a failed batch: `start_claimed_run`)."""
        asked = [job for job in jobs if job.run_token is not None]
        if not asked:
            return set()
        store = self.store
        tokens = store.atomic(
            lambda: store.startable_runs([job.id for job in asked]), single_statement=True
        )
        return {job.id for job in asked if tokens.get(job.id) == job.run_token}

    def fail_fast_batches(self, batch_ids: Collection[UUID]) -> set[UUID]:
        """Those of `batch_ids` whose failure mode is fail-fast: a held job of any other
        batch may start on its claim's checks, as a job in no batch does (a batch's mode
        never changes, so a worker reads each batch's once)."""
        ids = set(batch_ids)
        return self.store.fail_fast_batches(ids) if ids else set()

    def start_claimed_run(self, job: Job) -> str:
        """Before a held job runs: record its actual start (fenced), and hand it back if its
        queue was paused or fail it if its fail-fast batch failed meanwhile.

        Returns STARTED, LOST (the claim is no longer this run's), RELEASED or CANCELLED.
        """
        return self.finish_and_start_runs([], [job])[1][0]

    def finish_job_run(self, job: Job, outcome: JobOutcome) -> RecordedOutcome | None:
        """Record the outcome of `job`'s run, if it is still Running this run."""
        check_outcome(outcome)
        if job.run_token is None:
            return None
        now = self.now()

        def write(jobs: list[Job]) -> RecordedOutcome | None:
            attempts: list[FailedAttempt] = []
            recorded = self._record(jobs[0], outcome, now, attempts)
            self._insert_attempts(attempts)
            return recorded

        return self._on_copies([job], write)

    def finish_job_runs(
        self, finished: Sequence[tuple[Job, JobOutcome]]
    ) -> list[RecordedOutcome | None]:
        """Record many runs' outcomes: what a batch worker does with the jobs it finished.
        Plain completions (no schedule, no effects on other rows) are one statement of
        every claim's, in autocommit; the other outcomes one transaction, with a locking
        read and one statement per shape, then their effects on dependents, batches and
        workflows together."""
        return self.finish_and_start_runs(finished, [])[0]

    def finish_and_start_runs(
        self, finished: Sequence[tuple[Job, JobOutcome]], starting: Sequence[Job]
    ) -> tuple[list[RecordedOutcome | None], list[str]]:
        """What a batch worker writes between jobs: the outcomes of the runs it finished
        (as `finish_job_runs`), then the start of the held jobs it takes next (as
        `start_claimed_run`). The plain completions (no effects on other rows) are one
        statement in autocommit; the rest one transaction. A job started here starts when
        the previous ones ended, and sees their effects (a fail-fast batch failed by one of
        them)."""
        recorded, answers, _ = self.write_runs(finished, starting)
        return recorded, answers

    def write_runs(
        self,
        finished: Sequence[tuple[Job, JobOutcome]],
        starting: Sequence[Job],
        checking: Sequence[Job] = (),
        answered: dict[int, RecordedOutcome] | None = None,
        on_checked: Callable[[set[UUID]], None] | None = None,
    ) -> tuple[list[RecordedOutcome | None], list[str], set[UUID]]:
        """`finish_and_start_runs`, and the start checks of the held jobs of `checking`
        (`may_start`, read after the call began): (recorded, started, the ids of the held
        jobs that may start). The plain completions and the checks are one statement of
        their own, in autocommit, where the vendor can (most writes are only that); the
        other outcomes and the starts one transaction after it. A caller that retries the
        call after a fault passes the same `answered` each time: the completions committed
        by an earlier try keep their answers (their jobs took the completion's values).
        `on_checked` hears the checks' answer as soon as it is read (on MariaDB, before the
        transaction of the outcomes)."""
        for _, outcome in finished:
            check_outcome(outcome)
        if not finished and not starting and not checking:
            return [], [], set()
        now = self.now()
        free = {} if answered is None else answered
        todo = [i for i in range(len(finished)) if i not in free]
        done, startable = complete_free(
            self, [finished[i] for i in todo], now, checking, on_checked
        )
        free.update((todo[j], answer) for j, answer in done.items())
        rest = [pair for i, pair in enumerate(finished) if i not in free]
        if not rest and not starting:
            return [free[i] for i in range(len(finished))], [], startable
        outcomes = [outcome for _, outcome in rest]
        count = len(rest)

        def write(jobs: list[Job]):
            attempts: list[FailedAttempt] = []
            finishing = list(zip(jobs[:count], outcomes, strict=True))
            recorded = record_outcomes(self, finishing, now, attempts)
            answers = self._start_many(jobs[count:], now, attempts)
            self._insert_attempts(attempts)
            return recorded, answers

        recorded, answers = self._on_copies([*(job for job, _ in rest), *starting], write)
        others = iter(recorded)
        recorded = [free[i] if i in free else next(others) for i in range(len(finished))]
        return recorded, answers, startable

    def requeue_stale_jobs(
        self, queue_name: str | None = None, ran_by: str = ""
    ) -> StaleJobRecovery:
        """Take back Running jobs whose lease expired: Pending again, or Dead when their
        attempts are used up. Records a `ReaperRun`."""
        if queue_name is not None:
            validate_queue_name(queue_name)
        recovery = StaleJobRecovery()
        now = self.now()

        def one_pass() -> int:
            attempts: list[FailedAttempt] = []
            expired = self.store.lock_expired_leases(now, queue_name, REAPER_BATCH)
            found = self.store.find_jobs(Match(ids=[job_id for job_id, _ in expired]))
            jobs = {job.id: job for job in found}
            # Equal lease expiries (a batch claim) are taken in id order on every vendor, so
            # which of them a fail-fast failure reaches first does not depend on the database.
            expired.sort(key=lambda pair: (_lease_of(jobs, pair[0]), str(pair[0])))
            for job_id, token in expired:
                job = jobs.get(job_id)
                if job is None or job.run_token != token:
                    continue
                recorded = self._record(job, reaper_outcome(job, now), now, attempts)
                if recorded is not None:
                    recovery.note(job_id, recorded)
            self._insert_attempts(attempts)
            return len(expired)

        while self._atomic(one_pass) == REAPER_BATCH:
            pass
        self.store.insert_reaper_run(recovery.row(now, ran_by, queue_name))
        return recovery

    def _start_many(self, jobs: list[Job], now: datetime, attempts: list) -> list[str]:
        started: dict[UUID, tuple[bool, bool]] = {}
        for token, ids in _by_claim(jobs):
            started.update(self.store.start_runs(ids, token, now))
        failed_batches = {job.batch_id for job in jobs if started.get(job.id, (0, 0))[1]}
        errors = {
            batch_id: batch_failed_error(self.store.first_failure(batch_id, BATCH_FAILED))
            for batch_id in sorted(failed_batches, key=str)
        }
        answers = [LOST] * len(jobs)
        cancelling: list[int] = []
        for i, job in enumerate(jobs):
            if job.id not in started:
                continue
            paused, batch_failed = started[job.id]
            job.started_at = job.last_heartbeat_at = now
            if paused:
                answers[i] = RELEASED if self.release_job_run(job) else LOST
            elif batch_failed:
                cancelling.append(i)
            else:
                answers[i] = STARTED
        if cancelling:  # the held jobs of failed batches, failed together as one write's
            outcomes = [
                (jobs[i], JobOutcome.cancelled(errors[jobs[i].batch_id])) for i in cancelling
            ]
            recorded = record_outcomes(self, outcomes, now, attempts)
            for i, answer in zip(cancelling, recorded, strict=True):
                answers[i] = CANCELLED if answer else LOST
        return answers

    def _record(
        self, job: Job, outcome: JobOutcome, now: datetime, attempts: list[FailedAttempt]
    ) -> RecordedOutcome | None:
        """The fenced write of `outcome` and its effects (inside the caller's transaction);
        a failure's history row is added to `attempts`, which the caller inserts."""
        plan = plan_outcome(job, outcome, now, self.rng)
        row = history.outcome_row(job, outcome, plan.status, now)  # while the run is set
        if not self.store.update_runs([job.id], job.run_token, plan.fields):
            return None
        if row is not None:
            attempts.append(row)
        attempt, started_at = job.attempts, job.started_at  # before the plan's values
        recorded = effects.record(self.store, job, plan, now, type(self))
        signals.run_ended(
            self.store, type(self), job, outcome, plan.status, attempt, started_at, now
        )
        return recorded

    def _insert_attempts(self, attempts: list[FailedAttempt]) -> None:
        """The history rows of a write's failures: one INSERT for all of them, none if none
        failed (a write of completions costs nothing more)."""
        if attempts:
            self.store.insert_attempts(attempts)

    def _on_copies[T](self, jobs: list[Job], write: Callable[[list[Job]], T]) -> T:
        """Run `write(copies of jobs)` in one transaction; the jobs take the new values only
        once it is done. A transaction that fails (a dropped connection, a deadlock retried)
        must leave them as they were, or a retry would take the run for stale."""

        def work():
            # One copy per job object, however often it is listed: a job both finished and
            # started in one call must see, when started, that its run has just ended.
            by_object: dict[int, Job] = {}
            copies = []
            for job in jobs:
                if id(job) not in by_object:
                    by_object[id(job)] = _copy(job)
                copies.append(by_object[id(job)])
            return copies, write(copies)

        copies, result = self._atomic(work)
        for job, written in zip(jobs, copies, strict=True):
            job.__dict__.update(written.__dict__)
        return result


def _by_claim(jobs: Sequence[Job]) -> list[tuple[UUID, list[UUID]]]:
    """The ids of the jobs that have a run, by claim token (one statement each)."""
    by_token: dict[UUID, list[UUID]] = {}
    for job in jobs:
        if job.run_token is not None:
            by_token.setdefault(job.run_token, []).append(job.id)
    return list(by_token.items())


def _lease_of(jobs: dict[UUID, Job], job_id: UUID) -> datetime:
    job = jobs.get(job_id)
    return (
        job.lease_expires_at if job and job.lease_expires_at else datetime.max.replace(tzinfo=UTC)
    )


def _copy(job: Job) -> Job:
    """A copy of the job's field values. The writes set fields only, so the copy shares the
    instance state (`_state`) and skips `copy.copy`'s pickling protocol (0.5 us a job
    instead of 5 us, measured)."""
    clone = object.__new__(type(job))
    clone.__dict__.update(job.__dict__)
    return clone
