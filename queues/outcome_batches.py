"""The outcomes of a claim that are not plain completions (a retry, a failure, a recurring
job's completion, which sets its next run): written together, not one by one. Per claim,
one locking read fences the runs (`lock_runs`: which are still this run's, and which have
dependents), then one UPDATE per shape of outcome gives each row its own values
(`update_each`). The rules are `plan_outcome`'s, as for an outcome written
alone; the effects on the jobs and groups around them (`effects.record_all`) are taken once
for the whole write, after every outcome of it."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from uuid import UUID

from . import history, signals
from .models import FailedAttempt, Job
from .outcomes import JobOutcome, Plan, RecordedOutcome, plan_outcome


def completes_plainly(job: Job, outcome: JobOutcome) -> bool:
    """Whether the outcome is written by the completion statement (`complete_runs`, which
    writes each job's result): a completion of a job with no schedule (whose completion
    would set its next run)."""
    return outcome.kind == "completed" and not job.cron_schedule


def has_effects(job: Job, has_dependents: bool) -> bool:
    """Whether the outcome of `job`'s run changes rows other than its own."""
    return has_dependents or job.batch_id is not None or job.workflow_id is not None


def record_each(
    queue,
    finished: Sequence[tuple[Job, JobOutcome]],
    indexes: list[int],
    token: UUID,
    now: datetime,
    attempts: list[FailedAttempt],
    results: list[RecordedOutcome | None],
    grouped: list[tuple[int, Plan]],
    with_dependents: set[UUID],
) -> None:
    """Record the outcomes of `finished` at `indexes` (runs of the claim `token`) in the
    caller's transaction: their answers go to `results` (None: a stale run), their history
    rows to `attempts`, those whose effects reach other rows to `grouped` (and
    `with_dependents`, those that have dependents), for `effects.record_all`."""
    store = queue.store
    locked = store.lock_runs([finished[i][0].id for i in indexes], token)
    shapes: dict[tuple[str, ...], dict[UUID, dict]] = {}
    written: list[tuple[int, Plan]] = []
    for i in indexes:
        job, outcome = finished[i]
        if job.id not in locked:
            continue  # a stale run: nothing written, its answer stays None
        plan = plan_outcome(job, outcome, now, queue.rng)
        row = history.outcome_row(job, outcome, plan.status, now)  # while the run is set
        if row is not None:
            attempts.append(row)
        shapes.setdefault(tuple(plan.fields), {})[job.id] = plan.fields
        written.append((i, plan))
    for rows in shapes.values():
        store.update_each(rows)
    for i, plan in written:
        job, outcome = finished[i]
        attempt, started_at = job.attempts, job.started_at  # before the plan's values
        for name, value in plan.fields.items():
            setattr(job, name, value)
        results[i] = RecordedOutcome(status=plan.status, next_run_at=plan.next_run_at)
        if has_effects(job, locked[job.id]):
            grouped.append((i, plan))
            if locked[job.id]:
                with_dependents.add(job.id)
        signals.run_ended(store, type(queue), job, outcome, plan.status, attempt, started_at, now)
