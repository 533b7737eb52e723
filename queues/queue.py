"""`JobQueue`: the queue on one Django database (PostgreSQL, MySQL/MariaDB or SQLite).

Every method is one transaction. The claim and the reaper's lock are raw SQL from the
vendor's catalogue (see `queues/sql/`); the other writes are fenced ORM updates that match
the run's id, status and token, so a stale run changes nothing.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from uuid import UUID

from django.db.models import Count, F

from .clock import SYSTEM_CLOCK, SystemClock
from .engine import dialect_for
from .engine.graph import Change, Graph
from .enums import FAILURE_STATUSES, DependencyStatus, JobStatus, PartialFailureMode
from .exceptions import InvalidJob, InvalidJobTransition, InvalidWorkflow, JobNotFound
from .groups import BatchResult, JobBatch, JobGroup
from .models import Batch, Job, JobDependency, QueuePause, ReaperRun, Workflow
from .options import DequeueOptions
from .outcomes import (
    LEASE_EXPIRED_ERROR,
    JobOutcome,
    RecordedOutcome,
    StaleJobRecovery,
    plan_outcome,
)
from .validation import normalize_id, validate_job, validate_queue_name

#: What `start_claimed_run` did with a held job.
STARTED, LOST, RELEASED, CANCELLED = "started", "lost", "released", "cancelled"
REAPER_BATCH = 500
INSERT_BATCH = 500


class JobQueue:
    def __init__(self, using: str = "default", clock=None, rng: random.Random | None = None):
        self.using = using
        self.clock = clock or SYSTEM_CLOCK
        self.rng = rng or random.Random()
        self._dialect = None
        self._graph = Graph(using)

    def __repr__(self) -> str:
        return f"JobQueue(using={self.using!r})"

    @property
    def dialect(self):
        if self._dialect is None:
            self._dialect = dialect_for(self.using)
        return self._dialect

    def now(self) -> datetime:
        return self.clock.now()

    def _jobs(self):
        return Job.objects.using(self.using)

    def _atomic(self, fn):
        return self.dialect.atomic_retrying(fn)

    # Enqueue ----------------------------------------------------------------------------
    def enqueue(self, job: Job) -> UUID:
        return self.enqueue_many([job])[0]

    def enqueue_many(self, jobs: Iterable[Job]) -> list[UUID]:
        jobs = list(jobs)
        now = self.now()
        self._prepare(jobs, now)
        self._atomic(lambda: self._insert(jobs, now))
        return [job.id for job in jobs]

    def enqueue_workflow(self, group: JobGroup) -> UUID:
        group.validate()
        now = self.now()
        self._prepare(group.jobs, now)
        workflow = Workflow(
            id=group.id, name=group.name, failure_policy=group.failure_policy, created_at=now
        )
        for job in group.jobs:
            job.workflow_id = workflow.id

        def work():
            workflow.save(using=self.using, force_insert=True)
            self._insert(group.jobs, now)

        self._atomic(work)
        return workflow.id

    def enqueue_batch(self, batch: JobBatch) -> UUID:
        batch.validate()
        now = self.now()
        self._prepare(batch.jobs, now)
        row = Batch(
            id=batch.id,
            name=batch.name,
            failure_mode=batch.partial_failure_mode,
            metadata=batch.metadata,
            created_at=now,
        )
        for job in batch.jobs:
            job.batch_id = row.id

        def work():
            row.save(using=self.using, force_insert=True)
            self._insert(batch.jobs, now)

        self._atomic(work)
        return row.id

    def _prepare(self, jobs: Sequence[Job], now: datetime) -> None:
        if not jobs:
            return
        for job in jobs:
            if not isinstance(job, Job):
                raise InvalidJob(f"expected a Job, got {type(job).__name__}")
            if (
                not isinstance(self.clock, SystemClock)
                and isinstance(job.scheduled_at, datetime)
                and isinstance(job.created_at, datetime)
                and job.scheduled_at.tzinfo is not None
            ):
                # A moved clock: keep the delay the job was built with.
                job.scheduled_at = now + (job.scheduled_at - job.created_at)
            validate_job(job, now)
            job.created_at = now
        ids = [job.id for job in jobs]
        if len(set(ids)) != len(ids):
            raise InvalidJob("the same job was given twice")

    def _insert(self, jobs: list[Job], now: datetime) -> None:
        by_id = {str(job.id): job for job in jobs}
        external = {p for job in jobs for p in job.depends_on if p not in by_id}
        parents: dict[str, str] = {}
        if external:
            # Lock the parents so that none finishes between this check and the insert.
            parents = {
                str(pk): status
                for pk, status in self._jobs()
                .select_for_update()
                .filter(id__in=sorted(external))
                .values_list("id", "status")
            }
            missing = external - parents.keys()
            if missing:
                raise InvalidWorkflow(f"unknown dependency: {sorted(missing)[0]}")
        _settle_dependencies(jobs, by_id, parents, now)
        self._jobs().bulk_create(jobs, batch_size=INSERT_BATCH)
        edges = [
            JobDependency(job_id=job.id, parent_id=UUID(p)) for job in jobs for p in job.depends_on
        ]
        if edges:
            JobDependency.objects.using(self.using).bulk_create(edges, batch_size=INSERT_BATCH)
        changes: list[Change] = [
            (job.batch_id, job.workflow_id, None, job.status)
            for job in jobs
            if job.batch_id or job.workflow_id
        ]
        self._graph.apply_tallies(changes, now)

    # Claim ------------------------------------------------------------------------------
    def dequeue(self, queue_name: str, options: DequeueOptions | None = None) -> list[Job]:
        options = options or DequeueOptions()
        validate_queue_name(queue_name)
        if options.batch_size == 0:
            return []
        now = self.now()
        token = uuid.uuid4()
        expires = now + options.lease_duration
        weights = options.priority_weights
        dialect = self.dialect

        def strict():
            return dialect.claim(queue_name, options.batch_size, now, expires, token)

        def weighted():
            levels = dialect.claimable_levels(queue_name, now)
            claimed: list[Job] = []
            for level in weights.level_order(levels, self.rng):
                need = options.batch_size - len(claimed)
                got = dialect.claim(queue_name, need, now, expires, token, priority=level)
                claimed.extend(sorted(got, key=_age_key))
                if len(claimed) >= options.batch_size:
                    break
            return claimed

        if weights is None or weights.strict_priority:
            return sorted(self._atomic(strict), key=_claim_key)
        return self._atomic(weighted)

    def dequeue_one(self, queue_name: str, options: DequeueOptions | None = None) -> Job | None:
        options = (options or DequeueOptions()).with_batch_size(1)
        jobs = self.dequeue(queue_name, options)
        return jobs[0] if jobs else None

    # The run ----------------------------------------------------------------------------
    def _run(self, job: Job):
        if job.run_token is None:
            return None
        return self._jobs().filter(id=job.id, status=JobStatus.RUNNING, run_token=job.run_token)

    def heartbeat_job(self, job: Job, lease: timedelta) -> bool:
        run = self._run(job)
        if run is None:
            return False
        now = self.now()
        expires = now + _positive(lease)
        if not run.update(lease_expires_at=expires, last_heartbeat_at=now):
            return False
        job.lease_expires_at, job.last_heartbeat_at = expires, now
        return True

    def heartbeat_jobs(self, jobs: Sequence[Job], lease: timedelta) -> int:
        """Extend the leases of many runs in one statement per claim; returns how many
        were still this worker's."""
        now = self.now()
        expires = now + _positive(lease)
        by_token: dict[UUID, list[UUID]] = {}
        for job in jobs:
            if job.run_token is not None:
                by_token.setdefault(job.run_token, []).append(job.id)
        extended = 0
        for token, ids in by_token.items():
            extended += (
                self._jobs()
                .filter(id__in=ids, status=JobStatus.RUNNING, run_token=token)
                .update(lease_expires_at=expires, last_heartbeat_at=now)
            )
        return extended

    def release_job_run(self, job: Job) -> bool:
        """Hand an unstarted claimed job back: Pending, attempt taken back, start cleared."""
        run = self._run(job)
        if run is None:
            return False
        released = run.update(
            status=JobStatus.PENDING,
            attempts=F("attempts") - 1,
            started_at=None,
            last_heartbeat_at=None,
            lease_expires_at=None,
            run_token=None,
        )
        return bool(released)

    def start_claimed_run(self, job: Job) -> str:
        """Before a held job runs: record its actual start (fenced), and hand it back if its
        queue was paused or fail it if its fail-fast batch failed meanwhile.

        Returns STARTED, LOST (the claim is no longer this run's), RELEASED or CANCELLED.
        """
        run = self._run(job)
        if run is None:
            return LOST
        now = self.now()
        if not run.update(started_at=now, last_heartbeat_at=now):
            return LOST
        job.started_at = job.last_heartbeat_at = now
        if self.is_queue_paused(job.queue_name):
            return RELEASED if self.release_job_run(job) else LOST
        if job.batch_id:
            batch = (
                Batch.objects.using(self.using)
                .filter(id=job.batch_id)
                .values_list("failure_mode", "status")
                .first()
            )
            if batch and batch[0] == PartialFailureMode.FAIL_FAST and batch[1] == "Failed":
                first = (
                    self._jobs()
                    .filter(batch_id=job.batch_id, status__in=list(FAILURE_STATUSES))
                    .exclude(error_message__startswith="Batch failed")
                    .values_list("id", flat=True)
                    .first()
                )
                error = f"Batch failed: job {first} failed (fail-fast mode)"
                recorded = self.finish_job_run(job, JobOutcome.cancelled(error))
                return CANCELLED if recorded else LOST
        return STARTED

    def finish_job_run(self, job: Job, outcome: JobOutcome) -> RecordedOutcome | None:
        """Record the outcome of `job`'s run, if it is still Running this run."""
        if not isinstance(outcome, JobOutcome):
            raise TypeError("outcome must be a JobOutcome")
        if outcome.kind == "completed" and outcome.result is not None:
            from .validation import _check_json

            _check_json(outcome.result, "result")
        if job.run_token is None:
            return None
        now = self.now()
        recorded = self._atomic(lambda: self._record(job, outcome, now))
        return recorded

    def _record(self, job: Job, outcome: JobOutcome, now: datetime) -> RecordedOutcome | None:
        plan = plan_outcome(job, outcome, now, self.rng)
        if not self._run(job).update(**plan.fields):
            return None
        for name, value in plan.fields.items():
            setattr(job, name, value)
        recorded = RecordedOutcome(status=plan.status, next_run_at=plan.next_run_at)
        changes: list[Change] = [(job.batch_id, job.workflow_id, JobStatus.RUNNING, plan.status)]
        if plan.completed:
            recorded.unblocked = self._graph.release_dependents(job.id)
        if plan.terminal_failure:
            recorded.cancelled, more = self._graph.after_terminal_failure(job, now)
            changes += more
        self._graph.apply_tallies(changes, now)
        return recorded

    # Reaper -----------------------------------------------------------------------------
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
            expired = self.dialect.lock_expired_leases(now, queue_name, REAPER_BATCH)
            jobs = self._jobs().in_bulk([job_id for job_id, _ in expired])
            for job_id, token in expired:
                job = jobs.get(job_id)
                if job is None or job.run_token != token:
                    continue
                if job.attempts >= job.max_attempts:
                    outcome = JobOutcome.dead(LEASE_EXPIRED_ERROR)
                else:
                    outcome = JobOutcome.retry(now, LEASE_EXPIRED_ERROR)
                recorded = self._record(job, outcome, now)
                if recorded is None:
                    continue
                if recorded.status == JobStatus.DEAD:
                    recovery.dead.append(job_id)
                else:
                    recovery.requeued.append(job_id)
            return len(expired)

        while self._atomic(one_pass) == REAPER_BATCH:
            pass
        ReaperRun.objects.using(self.using).create(
            ran_at=now,
            ran_by=ran_by[:255],
            queue_name=queue_name,
            requeued_ids=[str(i) for i in recovery.requeued],
            dead_ids=[str(i) for i in recovery.dead],
        )
        return recovery

    # Pause ------------------------------------------------------------------------------
    def pause_queue(self, queue_name: str, paused_by: str | None = None, reason: str | None = None):
        validate_queue_name(queue_name)
        QueuePause.objects.using(self.using).update_or_create(
            queue_name=queue_name,
            defaults={"paused_at": self.now(), "paused_by": paused_by, "reason": reason},
        )

    def resume_queue(self, queue_name: str, resumed_by: str | None = None) -> None:
        validate_queue_name(queue_name)
        QueuePause.objects.using(self.using).filter(queue_name=queue_name).delete()

    def is_queue_paused(self, queue_name: str) -> bool:
        return QueuePause.objects.using(self.using).filter(queue_name=queue_name).exists()

    # Operators --------------------------------------------------------------------------
    def get_job(self, job_id: UUID | str) -> Job | None:
        return self._jobs().filter(id=_job_id(job_id)).first()

    def _locked(self, job_id) -> Job:
        job = self._jobs().select_for_update().filter(id=_job_id(job_id)).first()
        if job is None:
            raise JobNotFound(f"no job {job_id}")
        return job

    def enable_recurring_job(self, job_id: UUID | str) -> None:
        self._set_recurring(job_id, True)

    def disable_recurring_job(self, job_id: UUID | str) -> None:
        self._set_recurring(job_id, False)

    def _set_recurring(self, job_id, enabled: bool) -> None:
        def work():
            job = self._locked(job_id)
            if not job.cron_schedule:
                raise InvalidJobTransition(f"job {job.id} is not a recurring job")
            self._jobs().filter(id=job.id).update(recurring=enabled)

        self._atomic(work)

    def retry_job(self, job_id: UUID | str, at: datetime | None = None) -> None:
        """Back to Pending, scheduled at `at` (default now). A terminal job gets its attempts
        back; a Running job's current run is fenced out."""
        if at is not None and (not isinstance(at, datetime) or at.tzinfo is None):
            raise InvalidJob("retry time must be a timezone-aware datetime")
        now = self.now()

        def work():
            job = self._locked(job_id)
            if job.status in (JobStatus.COMPLETED, JobStatus.ARCHIVED) and not job.cron_schedule:
                raise InvalidJobTransition(f"job {job.id} is {job.status}; it cannot be retried")
            fields = {
                "status": JobStatus.PENDING,
                "scheduled_at": at or now,
                "started_at": None,
                "last_heartbeat_at": None,
                "lease_expires_at": None,
                "run_token": None,
            }
            if job.status in FAILURE_STATUSES:
                fields.update(attempts=0, failed_at=None, timed_out_at=None)
            if job.dependency_status == DependencyStatus.FAILED:
                blocked = (
                    JobDependency.objects.using(self.using)
                    .filter(job_id=job.id)
                    .exclude(parent__status=JobStatus.COMPLETED)
                    .exists()
                )
                fields["dependency_status"] = (
                    DependencyStatus.WAITING if blocked else DependencyStatus.SATISFIED
                )
            self._jobs().filter(id=job.id).update(**fields)
            self._graph.apply_tallies(
                [(job.batch_id, job.workflow_id, job.status, JobStatus.PENDING)], now
            )

        self._atomic(work)

    def cancel_job(self, job_id: UUID | str, reason: str = "Cancelled by an operator") -> None:
        """Fail a Pending or Running job for good (a running handler's outcome is then
        discarded); its dependents, workflow and fail-fast batch react as to any failure."""
        self._fail_for_good(job_id, JobStatus.FAILED, reason)

    def mark_job_dead(self, job_id: UUID | str, reason: str = "Marked dead by an operator") -> None:
        self._fail_for_good(job_id, JobStatus.DEAD, reason)

    def _fail_for_good(self, job_id, status: JobStatus, reason: str) -> None:
        now = self.now()

        def work():
            job = self._locked(job_id)
            if job.status not in (JobStatus.PENDING, JobStatus.RUNNING, JobStatus.RETRYING):
                raise InvalidJobTransition(f"job {job.id} is {job.status}, not Pending or Running")
            old = job.status
            self._jobs().filter(id=job.id).update(
                status=status,
                error_message=reason,
                failed_at=now,
                run_token=None,
                lease_expires_at=None,
                recurring=False,
            )
            job.status = status
            _, changes = self._graph.after_terminal_failure(job, now)
            self._graph.apply_tallies([(job.batch_id, job.workflow_id, old, status), *changes], now)

        self._atomic(work)

    def delete_job(self, job_id: UUID | str) -> None:
        """Delete a job that is not Running (and its dependency edges)."""
        now = self.now()

        def work():
            job = self._locked(job_id)
            if job.status == JobStatus.RUNNING:
                raise InvalidJobTransition(f"job {job.id} is Running; cancel it first")
            self._jobs().filter(id=job.id).delete()
            self._graph.apply_tallies([(job.batch_id, job.workflow_id, job.status, None)], now)

        self._atomic(work)

    # Reads ------------------------------------------------------------------------------
    def get_job_counts_by_status(self, queue_name: str) -> dict[str, int]:
        counts = dict.fromkeys(JobStatus.values, 0)
        rows = (
            self._jobs()
            .filter(queue_name=queue_name)
            .order_by()
            .values_list("status")
            .annotate(n=Count("id"))
        )
        for status, n in rows:
            counts[status] = n
        return counts

    def get_batch_jobs(self, batch_id: UUID | str) -> list[Job]:
        return list(self._jobs().filter(batch_id=_job_id(batch_id)).order_by("created_at", "id"))

    def get_batch_status(self, batch_id: UUID | str) -> BatchResult:
        batch = Batch.objects.using(self.using).filter(id=_job_id(batch_id)).first()
        if batch is None:
            raise JobNotFound(f"no batch {batch_id}")
        errors = {}
        if batch.failed_jobs:
            errors = dict(
                self._jobs()
                .filter(batch_id=batch.id, status__in=list(FAILURE_STATUSES))
                .values_list("id", "error_message")[:1000]
            )
        return BatchResult(
            batch_id=batch.id,
            status=batch.status,
            total_jobs=batch.total_jobs,
            completed_jobs=batch.completed_jobs,
            failed_jobs=batch.failed_jobs,
            pending_jobs=batch.pending_jobs,
            created_at=batch.created_at,
            completed_at=batch.completed_at,
            job_errors=errors,
        )


def _claim_key(job: Job):
    return (-job.priority, job.scheduled_at, str(job.id))


def _age_key(job: Job):
    return (job.scheduled_at, str(job.id))


def _job_id(value) -> UUID:
    try:
        return UUID(normalize_id(value))
    except InvalidWorkflow as exc:
        raise InvalidJob(f"{value!r} is not a job id") from exc


def _positive(lease: timedelta) -> timedelta:
    if not isinstance(lease, timedelta) or lease <= timedelta(0):
        raise ValueError("a lease must be a positive timedelta")
    return lease


def _settle_dependencies(jobs, by_id, parents, now) -> None:
    """Each new job with dependencies starts waiting, satisfied (every parent already
    completed) or failed (a parent already failed for good)."""
    status_of = dict(parents)
    changed = True
    while changed:
        changed = False
        for job in jobs:
            if not job.depends_on or job.status == JobStatus.FAILED:
                continue
            statuses = [status_of.get(p) or by_id[p].status for p in job.depends_on]
            failed = [
                p for p, s in zip(job.depends_on, statuses, strict=True) if s in FAILURE_STATUSES
            ]
            if failed:
                job.status = JobStatus.FAILED
                job.dependency_status = DependencyStatus.FAILED
                job.error_message = f"Dependency failed: job {failed[0]} failed"
                job.failed_at = now
                changed = True
            elif all(s == JobStatus.COMPLETED for s in statuses):
                job.dependency_status = DependencyStatus.SATISFIED
            else:
                job.dependency_status = DependencyStatus.WAITING
