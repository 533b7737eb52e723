"""The outcomes of a batch that are not plain completions (a result, a retry, a failure), for
jobs in no batch, workflow or schedule: written together, not one by one. Per claim, one
locking read fences the runs (`lock_runs`: which are still this run's, and which have
dependents), then one UPDATE per shape of outcome gives each row its own values
(`update_each`). The rules are `plan_outcome`'s and the effects `effects.record`'s, as for
an outcome written alone; only the statements are shared.

Jobs of a batch, a workflow or a schedule stay one by one (their effects lock the group
rows and reschedule in place), as do the dependents of the jobs written here: a job with
dependents takes `effects.record`, which releases or fails them."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from uuid import UUID

from . import effects, history, signals
from .models import FailedAttempt, Job
from .outcomes import JobOutcome, Plan, RecordedOutcome, plan_outcome


def can_batch(job: Job) -> bool:
    """Whether the outcome of `job`'s run is written with the others of its claim: a job
    whose outcome touches no group row nor its own schedule."""
    return not (job.batch_id or job.workflow_id or job.cron_schedule)


def record_each(
    queue,
    finished: Sequence[tuple[Job, JobOutcome]],
    indexes: list[int],
    token: UUID,
    now: datetime,
    attempts: list[FailedAttempt],
    results: list[RecordedOutcome | None],
) -> None:
    """Record the outcomes of `finished` at `indexes` (runs of the claim `token`) in the
    caller's transaction: their answers go to `results` (None: a stale run), their history
    rows to `attempts`."""
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
        if locked[job.id]:
            results[i] = effects.record(store, job, plan, now)
        else:  # no dependents, no group: only the job itself changes
            for name, value in plan.fields.items():
                setattr(job, name, value)
            results[i] = RecordedOutcome(status=plan.status, next_run_at=plan.next_run_at)
        signals.run_ended(store, type(queue), job, outcome, plan.status, attempt, started_at, now)
