"""Why is this job waiting? `explain(queue, job_id)` answers in plain words, each reason with its
evidence: its time, a backoff, its dependencies, its queue's pause, limit and rate, the worker
processes alive, the jobs ahead of it, a unique key held by another job. A handful of indexed
reads, every one through the queue's `Store`, so that `TestQueue` answers alike. Reads only.
See docs/design/engine.md ("Why is a job waiting?")."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

from django.db.models import Q, QuerySet

from queues.engine import unique
from queues.engine.rates import next_window, tokens_at
from queues.enums import DependencyStatus, JobStatus
from queues.exceptions import JobNotFound
from queues.models import Job
from queues.store.base import Match, claim_key
from queues.validation import parse_job_id

#: Jobs ahead are counted up to this many ("at least" beyond it): a bounded read.
AHEAD_CAP = 1000
#: The unfinished dependencies named (the rest are counted).
SHOWN_DEPENDENCIES = 20
#: A worker process whose heartbeat is older than this is not alive (the Workers page's rule).
WORKER_ALIVE = timedelta(seconds=60)
#: The live worker processes read at most.
PROCESS_CAP = 500


@dataclass(frozen=True)
class Reason:
    """One reason: a code (`scheduled`, `backoff`, `recurring_disabled`, `dependencies`,
    `paused`, `concurrency`, `rate`, `no_worker`, `unique_key`, `ahead`, `ready`,
    `not_waiting`), the sentence, whether it keeps the job from being claimed now
    (`blocking`), and the evidence it is read from."""

    code: str
    text: str
    blocking: bool = True
    evidence: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Explanation:
    """The answer about one job at `now`: its reasons, blocking ones first."""

    job_id: UUID
    status: str
    queue_name: str
    now: datetime
    reasons: list[Reason]

    @property
    def waiting(self) -> bool:
        """Whether the job is Pending (waiting for a claim, for whatever reason)."""
        return self.status == JobStatus.PENDING

    @property
    def runnable(self) -> bool:
        """Whether a worker of its queue could claim it now."""
        return self.waiting and not any(reason.blocking for reason in self.reasons)

    def codes(self) -> list[str]:
        return [reason.code for reason in self.reasons]


@dataclass(frozen=True)
class _Ahead:
    """The Pending, due jobs of a queue that a claim takes before `job` (a store `Selection`):
    of a higher priority level only (`higher`), or every one earlier in claim order."""

    job: Job
    now: datetime
    higher: bool

    def rows(self, using: str) -> QuerySet:
        job = self.job
        rows = Job.objects.using(using).filter(
            queue_name=job.queue_name, status=JobStatus.PENDING, scheduled_at__lte=self.now
        )
        earlier = Q(priority__gt=job.priority)
        if not self.higher:
            same = Q(priority=job.priority)
            earlier |= same & Q(task_priority__gt=job.task_priority)
            same &= Q(task_priority=job.task_priority)
            earlier |= same & Q(scheduled_at__lt=job.scheduled_at)
        return rows.filter(earlier).exclude(id=job.id)

    def matches(self, other: Job) -> bool:
        job = self.job
        if other.queue_name != job.queue_name or other.id == job.id:
            return False
        if other.status != JobStatus.PENDING or other.scheduled_at > self.now:
            return False
        if self.higher:
            return other.priority > job.priority
        return claim_key(other)[:3] < claim_key(job)[:3]


def explain(queue, job_id: UUID | str) -> Explanation:
    """Why the job of `job_id` is waiting, read through `queue`'s store at `queue.now()`.
    An unknown job raises `JobNotFound`; a bad id `InvalidJob`."""
    store, now = queue.store, queue.now()
    jobs = store.find_jobs(Match(ids=[parse_job_id(job_id)]), limit=1)
    if not jobs:
        raise JobNotFound(f"no job {job_id}")
    job = jobs[0]
    answer = Explanation(job.id, job.status, job.queue_name, now, [])
    if job.status != JobStatus.PENDING:
        answer.reasons.append(_not_waiting(job))
        return answer
    reasons = answer.reasons
    reasons += _own(store, job, now)
    reasons += _queue(queue, store, job, now)
    reasons += _workers(store, job, now)
    reasons += _unique(store, job, now)
    reasons += _ahead(store, job, now)
    if not any(reason.blocking for reason in reasons):
        reasons.insert(0, Reason("ready", "It could run now: a worker of its queue claims it "
                                 "at its next poll.", blocking=False))  # fmt: skip
    reasons.sort(key=lambda reason: not reason.blocking)
    return answer


def _not_waiting(job: Job) -> Reason:
    if job.status in (JobStatus.RUNNING, JobStatus.RETRYING):
        text = f"It is not waiting: it is {job.status} (attempt {job.attempts})."
        return Reason("not_waiting", text, False, {"started_at": job.started_at})
    return Reason("not_waiting", f"It is not waiting: it has finished ({job.status}).", False)


def _own(store, job: Job, now: datetime) -> list[Reason]:
    """What the job's own row says: its time, its backoff, its dependencies, its schedule."""
    reasons = []
    if job.scheduled_at > now and job.attempts:
        attempts = store.find_attempts(job.id)
        last = attempts[-1] if attempts else None
        evidence = {"attempt": job.attempts, "until": job.scheduled_at,
                    "error": last.error if last else job.error_message,
                    "exception_class": last.exception_class if last else None}  # fmt: skip
        text = f"It backs off after attempt {job.attempts} until {_utc(job.scheduled_at)}."
        reasons.append(Reason("backoff", text, True, evidence))
    elif job.scheduled_at > now:
        text = f"It is scheduled for later: {_utc(job.scheduled_at)}."
        reasons.append(Reason("scheduled", text, True, {"at": job.scheduled_at}))
    if job.cron_schedule is not None and not job.recurring:
        text = "It is a recurring job that is disabled: enable it to run it."
        reasons.append(Reason("recurring_disabled", text, True, {"cron": job.cron_schedule}))
    if job.dependency_status in (DependencyStatus.WAITING, DependencyStatus.FAILED):
        reasons.append(_dependencies(store, job))
    return reasons


def _dependencies(store, job: Job) -> Reason:
    ids = [parse_job_id(value) for value in (job.depends_on or [])]
    parents = store.find_jobs(Match(ids=ids)) if ids else []
    unfinished = sorted(
        (p for p in parents if p.status != JobStatus.COMPLETED), key=lambda p: str(p.id)
    )
    shown = [{"id": p.id, "status": p.status, "queue": p.queue_name} for p in unfinished]
    evidence = {"total": len(ids), "unfinished": len(unfinished),
                "jobs": shown[:SHOWN_DEPENDENCIES]}  # fmt: skip
    if job.dependency_status == DependencyStatus.FAILED:
        text = "A job it depends on failed: it will not run unless that job is retried."
    else:
        text = f"It waits on {len(unfinished)} of its {len(ids)} dependencies."
    return Reason("dependencies", text, True, evidence)


def _queue(queue, store, job: Job, now: datetime) -> list[Reason]:
    """Its queue's pause, concurrency limit and rate."""
    reasons = []
    pause = store.get_pause(job.queue_name)
    if pause is not None:
        by = pause.paused_by or "someone"
        text = f"Its queue is paused, by {by} since {_utc(pause.paused_at)}."
        evidence = {"paused_by": pause.paused_by, "paused_at": pause.paused_at,
                    "reason": pause.reason}  # fmt: skip
        reasons.append(Reason("paused", text, True, evidence))
    config = store.get_queue_config(job.queue_name)
    if config is None:
        return reasons
    if config.max_running is not None:
        running = store.count_running(job.queue_name)
        if running >= config.max_running:
            text = (f"Its queue is at its concurrency limit: {running} running of at most "
                    f"{config.max_running}.")  # fmt: skip
            evidence = {"running": running, "max_running": config.max_running}
            reasons.append(Reason("concurrency", text, True, evidence))
    if config.rate_limit is not None and config.rate_period is not None:
        left, _window = tokens_at(config, now)
        if left <= 0:
            refill = next_window(config, now)
            text = (f"Its queue has used its rate, {config.rate_limit} jobs per "
                    f"{config.rate_period:g} s: the next window opens {_utc(refill)}.")  # fmt: skip
            evidence = {"rate_limit": config.rate_limit, "rate_period": config.rate_period,
                        "tokens_left": left, "next_window": refill}  # fmt: skip
            reasons.append(Reason("rate", text, True, evidence))
    return reasons


def _workers(store, job: Job, now: datetime) -> list[Reason]:
    """No live worker process serves its queue (the Workers page's registry)."""
    alive = store.live_processes(now - WORKER_ALIVE, PROCESS_CAP)
    serving = [p for p in alive if job.queue_name in (p.queues or [])]
    if serving:
        return []
    served = sorted({name for p in alive for name in (p.queues or [])})
    text = (
        f"No live worker serves its queue: {len(alive)} worker process"
        f"{'' if len(alive) == 1 else 'es'} alive, serving {', '.join(served) or 'nothing'}."
    )
    evidence = {"alive": len(alive), "queues_served": served}
    return [Reason("no_worker", text, True, evidence)]


def _unique(store, job: Job, now: datetime) -> list[Reason]:
    """Another job that holds the job's unique key."""
    if job.unique_slot is None:
        return []
    others = store.find_jobs(Match(unique_slots=[job.unique_slot]), limit=5)
    holder = next((o for o in others if o.id != job.id and unique.holds(o, now)), None)
    if holder is None:
        return []
    text = f"Its unique key is held by another job, {holder.id} ({holder.status})."
    evidence = {"key": job.unique_key, "holder": holder.id, "holder_status": holder.status}
    # The claim does not ask the key: a held key is context (why a duplicate was refused).
    return [Reason("unique_key", text, False, evidence)]


def _ahead(store, job: Job, now: datetime) -> list[Reason]:
    """The jobs a claim takes first: at a higher priority, and all of them in claim order."""
    higher = len(store.select_ids(_Ahead(job, now, higher=True), limit=AHEAD_CAP))
    ahead = len(store.select_ids(_Ahead(job, now, higher=False), limit=AHEAD_CAP))
    if not ahead:
        return []
    capped = "at least " if ahead >= AHEAD_CAP else ""
    text = f"{capped}{ahead:,} due jobs are ahead of it in its queue"
    if higher:
        text += f", {'at least ' if higher >= AHEAD_CAP else ''}{higher:,} at a higher priority"
    evidence = {"ahead": ahead, "higher_priority": higher, "capped": bool(capped)}
    return [Reason("ahead", text[0].upper() + text[1:] + ".", False, evidence)]


def _utc(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
