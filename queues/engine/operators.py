"""An operator's retry, cancel and mark dead (`Operators`, mixed into `JobQueue`): of one job,
and of many in one transaction, ending as the single calls one by one would. The rules are
`outcomes`' and `transitions`'; the plain jobs of a batch share their statements, the others
take the single path. See docs/design/engine.md ("Operator actions").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from uuid import UUID

from django.db import IntegrityError

from queues import signals
from queues.engine import effects, history, transitions, unique
from queues.engine.core import QueuePart
from queues.engine.outcomes import fail_for_good_fields, retry_fields
from queues.enums import AttemptEnd, DependencyStatus, JobStatus
from queues.exceptions import InvalidJobTransition
from queues.models import Job
from queues.store import Match
from queues.validation import check_retry_time, parse_job_id

RETRIED_RUNNING = "Retried by an operator while Running; this run's outcome is discarded"


@dataclass
class JobsActed:
    """What `retry_jobs`, `cancel_jobs` or `mark_jobs_dead` did with the ids given."""

    done: list[UUID] = field(default_factory=list)
    refused: list[UUID] = field(default_factory=list)  # the action does not apply (`reasons`)
    kept: list[UUID] = field(default_factory=list)  # the caller's condition no longer held
    missing: int = 0  # ids of no job (deleted meanwhile, or never there)
    reasons: dict[UUID, str] = field(default_factory=dict)  # why each refused one was

    def refuse(self, job_id: UUID, reason: str) -> None:
        self.refused.append(job_id)
        self.reasons[job_id] = reason

    def refusals(self) -> list[str]:
        """Why each job given was not acted on, as the single methods' errors say it."""
        said = [self.reasons[job_id] for job_id in self.refused]
        said += [f"job {job_id} no longer matches" for job_id in self.kept]
        return said + ["no such job"] * self.missing


class Operators(QueuePart):
    """`JobQueue`'s operator actions: retry, cancel, mark dead, of one job or many."""

    def retry_job(self, job_id: UUID | str, at: datetime | None = None) -> None:
        """Back to Pending, scheduled at `at` (default now). A terminal job gets its attempts
        back; a Running job's current run is fenced out."""
        check_retry_time(at)
        now = self.now()
        try:
            self._atomic(lambda: self._retry_one(job_id, at or now, now))
        except IntegrityError as exc:  # an enqueue took the key it was taking back
            raise InvalidJobTransition(_key_taken(job_id)) from exc

    def retry_jobs(
        self,
        job_ids: Iterable[UUID | str],
        at: datetime | None = None,
        where: Callable[[Job], bool] | None = None,
    ) -> JobsActed:
        """`retry_job` on those of `job_ids` it applies to and, if given, `where` holds for
        once locked, in one transaction and a few statements for them all."""
        check_retry_time(at)
        now = self.now()
        at = at or now
        ids = _ids(job_ids)
        store = self.store

        def work() -> JobsActed:
            jobs, result = _lock(store, ids, transitions.RETRY, where)
            alone = [job for job in jobs if _takes_key_back(job)]
            plain = [job for job in jobs if not _takes_key_back(job)]
            asks = [job.id for job in plain if job.dependency_status == DependencyStatus.FAILED]
            blocked = store.blocked(asks) if asks else set()
            written = [
                (job, retry_fields(job, at, lambda job=job: job.id in blocked)) for job in plain
            ]
            self._write_plain(written, JobStatus.PENDING, now)
            result.done.extend(job.id for job in plain)
            retry = lambda job_id: self._retry_one(job_id, at, now)  # noqa: E731
            self._one_by_one(result, alone, retry, (IntegrityError, InvalidJobTransition))
            return _sorted(result)

        return self._atomic(work)

    def cancel_job(self, job_id: UUID | str, reason: str = "Cancelled by an operator") -> None:
        """Fail a Pending or Running job for good (a running handler's outcome is then
        discarded); its dependents, workflow and fail-fast batch react as to any failure."""
        self._fail_for_good(job_id, JobStatus.FAILED, reason)

    def cancel_jobs(
        self,
        job_ids: Iterable[UUID | str],
        reason: str = "Cancelled by an operator",
        where: Callable[[Job], bool] | None = None,
    ) -> JobsActed:
        """`cancel_job` on those of `job_ids` it applies to and `where` holds for, in one
        transaction."""
        return self._fail_many(job_ids, JobStatus.FAILED, reason, where)

    def mark_job_dead(self, job_id: UUID | str, reason: str = "Marked dead by an operator") -> None:
        self._fail_for_good(job_id, JobStatus.DEAD, reason)

    def mark_jobs_dead(
        self,
        job_ids: Iterable[UUID | str],
        reason: str = "Marked dead by an operator",
        where: Callable[[Job], bool] | None = None,
    ) -> JobsActed:
        """`mark_job_dead` on many jobs, as `cancel_jobs`."""
        return self._fail_many(job_ids, JobStatus.DEAD, reason, where)

    def _fail_for_good(self, job_id, status: JobStatus, reason: str) -> None:
        now = self.now()
        self._atomic(lambda: self._fail_one(job_id, status, reason, now))

    def _fail_many(self, job_ids: Iterable, status: JobStatus, reason: str, where) -> JobsActed:
        ids = _ids(job_ids)
        store = self.store
        now = self.now()
        action = transitions.CANCEL if status == JobStatus.FAILED else transitions.MARK_DEAD

        def work() -> JobsActed:
            jobs, result = _lock(store, ids, action, where)
            parents = set(store.dependents_of([job.id for job in jobs])) if jobs else set()
            alone = [job for job in jobs if _reaches_others(job, parents)]
            plain = [job for job in jobs if not _reaches_others(job, parents)]
            written = [(job, fail_for_good_fields(job, status, reason, now)) for job in plain]
            self._write_plain(written, status, now)
            result.done.extend(job.id for job in plain)
            fail = lambda job_id: self._fail_one(job_id, status, reason, now)  # noqa: E731
            self._one_by_one(result, alone, fail, (InvalidJobTransition,))
            return _sorted(result)

        return self._atomic(work)

    # The single path (one job, inside the caller's transaction) -------------------------
    def _retry_one(self, job_id, at: datetime, now: datetime) -> None:
        job = self._locked(job_id)
        blocked = lambda: bool(self.store.blocked([job.id]))  # noqa: E731
        fields = retry_fields(job, at, blocked)
        retaken = unique.retake(self.store, job, now)
        self.store.update_jobs(Match(ids=[job.id]), {**fields, **retaken})
        self._note_ended_run(job, fields, JobStatus.PENDING, now)
        change = (job.batch_id, job.workflow_id, job.status, JobStatus.PENDING)
        effects.apply_tallies(self.store, [change], now, type(self))
        self._announce_operator(job, fields, JobStatus.PENDING, now)

    def _fail_one(self, job_id, status: JobStatus, reason: str, now: datetime) -> None:
        job = self._locked(job_id)
        old = job.status
        fields = fail_for_good_fields(job, status, reason, now)
        self.store.update_jobs(Match(ids=[job.id]), fields)
        self._note_ended_run(job, fields, status, now)
        job.status = status
        _, more = effects.after_terminal_failure(self.store, job, now)
        changes = [(job.batch_id, job.workflow_id, old, status), *more]
        effects.apply_tallies(self.store, changes, now, type(self))
        self._announce_operator(job, fields, status, now)

    def _note_ended_run(self, job: Job, fields: dict, status: str, now: datetime) -> None:
        """The history row of the run the action ended, if `job` was Running; its worker
        notes on it later how the handler ended."""
        row = _ended_run(job, fields, status, now)
        if row is not None:
            self.store.insert_attempts([row])

    # The batch path -----------------------------------------------------------------------
    def _write_plain(self, written: list[tuple[Job, dict]], status: str, now: datetime) -> None:
        """The fields of `written` ([(locked job, its fields)]), as the single path writes
        them, in a few statements for them all: one UPDATE per shape of fields, one insert
        of history rows, one `apply_tallies`."""
        if not written:
            return
        store = self.store
        shapes: dict[tuple[str, ...], dict[UUID, dict]] = {}
        attempts, changes = [], []
        for job, fields in written:
            shapes.setdefault(tuple(fields), {})[job.id] = fields
            row = _ended_run(job, fields, status, now)
            if row is not None:
                attempts.append(row)
            changes.append((job.batch_id, job.workflow_id, job.status, status))
        for rows in shapes.values():
            store.update_each(rows)
        if attempts:
            store.insert_attempts(attempts)
        effects.apply_tallies(store, changes, now, type(self))
        for job, fields in written:
            self._announce_operator(job, fields, status, now)

    def _one_by_one(self, result: JobsActed, jobs: list[Job], act: Callable, refusals) -> None:
        """`act(job id)`, the single path, on each of `jobs` in id order (each seeing what
        the ones before it did), each in a savepoint: done, or refused if it raised one of
        `refusals` (an `IntegrityError`: an enqueue took the key a retry was taking back)."""
        for job in jobs:
            try:
                self.store.atomic(lambda job=job: act(job.id))
            except refusals as exc:
                reason = _key_taken(job.id) if isinstance(exc, IntegrityError) else str(exc)
                result.refuse(job.id, reason)
            else:
                result.done.append(job.id)

    def _announce_operator(self, job: Job, fields: dict, status: str, now) -> None:
        """The signal of an operator's action on `job` (sent once it commits)."""
        attempt, started_at = job.attempts, job.started_at
        for name, value in fields.items():
            setattr(job, name, value)
        signals.operator_acted(self.store, type(self), job, status, attempt, started_at, now)


def _ended_run(job: Job, fields: dict, status: str, now: datetime):
    """The history row of the run that an action on `job` ends (None if it was not Running),
    built before the job takes `fields`."""
    if status == JobStatus.PENDING:
        end, reason = AttemptEnd.RETRIED, RETRIED_RUNNING
    else:
        end = AttemptEnd.CANCELLED if status == JobStatus.FAILED else AttemptEnd.MARKED_DEAD
        reason = fields["error_message"]
    return history.operator_row(job, end, status, reason, now)


def _key_taken(job_id) -> str:
    return f"another job took the unique key of job {job_id}"


def _ids(job_ids: Iterable) -> list[UUID]:
    """Every id checked before anything is locked: a bad one raises `InvalidJob`."""
    return sorted({parse_job_id(job_id) for job_id in job_ids}, key=str)


def _lock(store, ids: list[UUID], action: str, where: Callable[[Job], bool] | None):
    locked = store.lock_jobs(Match(ids=ids)) if ids else []
    acted, refused, kept = transitions.sort_out(action, locked, where)
    missing = len(ids) - len(locked)
    return acted, JobsActed(refused=list(refused), kept=kept, missing=missing, reasons=refused)


def _takes_key_back(job: Job) -> bool:
    """Whether retrying `job` takes back the unique slot it gave up (`unique.retake`)."""
    return job.unique_key is not None and job.unique_slot is None


def _reaches_others(job: Job, parents: set[UUID]) -> bool:
    """Whether failing `job` for good may touch other rows, or be touched by another's."""
    grouped = job.batch_id or job.workflow_id
    return bool(grouped) or job.id in parents or job.dependency_status != DependencyStatus.NONE


def _sorted(result: JobsActed) -> JobsActed:
    result.done.sort(key=str)
    result.refused.sort(key=str)
    return result
