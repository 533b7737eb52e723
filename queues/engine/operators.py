"""An operator's retry, cancel or mark-dead of many jobs at once (`JobQueue.retry_jobs`,
`cancel_jobs`, `mark_jobs_dead`): the rules of `retry_job` and `cancel_job`, written once in
`outcomes`, `history`, `unique`, `effects` and `signals`; only the statements are shared, as
`outcome_batches` shares a claim's outcomes.

In one transaction: the rows are locked in id order, each is refused as `transitions` says
(or kept when the caller's `where` no longer holds for the locked row), then the plain jobs
are written together: `blocked()` asked once, one UPDATE per shape of fields
(`update_each`), one insert of the history rows of the runs fenced out, one `apply_tallies`
with every change. A page of plain jobs is so a constant number of statements.

A job whose action reaches other rows takes the single method's own path (its savepoint,
its relock) inside the same transaction, in id order, as if called one by one:
- a retry that takes a unique key back (another job may hold it: refused, or an enqueue may
  take it under us: an `IntegrityError`, refused too);
- a cancel of a job of a batch or a workflow, with dependents, or with parents (a parent's
  cascade in the same call may fail it first). A plain job is none of these, so nothing
  else in the call changes it: writing it before or after them is the same."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from uuid import UUID

from django.db import IntegrityError

from queues.engine import effects, history, transitions
from queues.engine.outcomes import fail_for_good_fields, retry_fields
from queues.enums import AttemptEnd, DependencyStatus, JobStatus
from queues.exceptions import InvalidJobTransition
from queues.models import Job
from queues.store import Match
from queues.validation import parse_job_id

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


def retry(queue, job_ids: Iterable, at: datetime, now: datetime, where) -> JobsActed:
    ids = _ids(job_ids)
    store = queue.store

    def work() -> JobsActed:
        jobs, result = _lock(store, ids, transitions.RETRY, where)
        alone = [job for job in jobs if _takes_key_back(job)]
        plain = [job for job in jobs if not _takes_key_back(job)]
        asks = [job.id for job in plain if job.dependency_status == DependencyStatus.FAILED]
        blocked = store.blocked(asks) if asks else set()
        written = [(job, retry_fields(job, at, lambda job=job: job.id in blocked)) for job in plain]
        _write(queue, written, JobStatus.PENDING, AttemptEnd.RETRIED, now)
        result.done.extend(job.id for job in plain)
        for job in alone:
            try:
                store.atomic(lambda job=job: queue._retry_one(job.id, at, now))
            except IntegrityError:  # an enqueue took the key it was taking back
                result.refuse(job.id, f"another job took the unique key of job {job.id}")
            except InvalidJobTransition as exc:
                result.refuse(job.id, str(exc))
            else:
                result.done.append(job.id)
        return _sorted(result)

    return queue._atomic(work)


def fail_for_good(queue, job_ids: Iterable, status: str, reason: str, where) -> JobsActed:
    ids = _ids(job_ids)
    store = queue.store
    now = queue.now()
    action = transitions.CANCEL if status == JobStatus.FAILED else transitions.MARK_DEAD
    end = AttemptEnd.CANCELLED if status == JobStatus.FAILED else AttemptEnd.MARKED_DEAD

    def work() -> JobsActed:
        jobs, result = _lock(store, ids, action, where)
        parents = set(store.dependents_of([job.id for job in jobs])) if jobs else set()
        alone = [job for job in jobs if _reaches_others(job, parents)]
        plain = [job for job in jobs if not _reaches_others(job, parents)]
        written = [(job, fail_for_good_fields(job, status, reason, now)) for job in plain]
        _write(queue, written, status, end, now)
        result.done.extend(job.id for job in plain)
        for job in alone:  # in id order, each seeing what the ones before it failed
            try:
                store.atomic(lambda job=job: queue._fail_one(job.id, status, reason, now))
            except InvalidJobTransition as exc:
                result.refuse(job.id, str(exc))
            else:
                result.done.append(job.id)
        return _sorted(result)

    return queue._atomic(work)


def _ids(job_ids: Iterable) -> list[UUID]:
    """Every id checked before anything is locked: a bad one raises `InvalidJob`."""
    return sorted({parse_job_id(job_id) for job_id in job_ids}, key=str)


def _lock(store, ids: list[UUID], action: str, where: Callable[[Job], bool] | None):
    locked = store.lock_jobs(Match(ids=ids)) if ids else []
    result = JobsActed(missing=len(ids) - len(locked))
    acted = []
    for job in sorted(locked, key=lambda job: str(job.id)):
        reason = transitions.refusal(action, job)
        if reason is not None:
            result.refuse(job.id, reason)
        elif where is not None and not where(job):
            result.kept.append(job.id)
        else:
            acted.append(job)
    return acted, result


def _takes_key_back(job: Job) -> bool:
    """Whether retrying `job` takes back the unique slot it gave up (`unique.retake`)."""
    return job.unique_key is not None and job.unique_slot is None


def _reaches_others(job: Job, parents: set[UUID]) -> bool:
    """Whether failing `job` for good may touch other rows, or be touched by another's."""
    grouped = job.batch_id or job.workflow_id
    return bool(grouped) or job.id in parents or job.dependency_status != DependencyStatus.NONE


def _write(queue, written: list[tuple[Job, dict]], status: str, end: str, now) -> None:
    """The fields of `written` ([(locked job, its fields)]), as the single methods write
    them, in a few statements for them all."""
    if not written:
        return
    store = queue.store
    shapes: dict[tuple[str, ...], dict[UUID, dict]] = {}
    attempts, changes = [], []
    for job, fields in written:
        shapes.setdefault(tuple(fields), {})[job.id] = fields
        reason = RETRIED_RUNNING if status == JobStatus.PENDING else fields["error_message"]
        row = history.operator_row(job, end, status, reason, now)  # while the run is set
        if row is not None:
            attempts.append(row)
        changes.append((job.batch_id, job.workflow_id, job.status, status))
    for rows in shapes.values():
        store.update_each(rows)
    if attempts:
        store.insert_attempts(attempts)
    effects.apply_tallies(store, changes, now)
    for job, fields in written:
        queue._announce_operator(job, fields, status, now)


def _sorted(result: JobsActed) -> JobsActed:
    result.done.sort(key=str)
    result.refused.sort(key=str)
    return result
