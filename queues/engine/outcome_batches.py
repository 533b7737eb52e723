"""The outcomes of a worker's write, recorded together (`record_outcomes`): plain
completions with one fenced statement for every claim, the other outcomes by claim token
with one locking read and one UPDATE per shape, then the effects of them all at once. The
rules are `plan_outcome`'s. See docs/design/engine.md ("Runs").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from datetime import datetime
from uuid import UUID

from queues import signals
from queues.engine import effects, history
from queues.engine.core import QueueCore
from queues.engine.outcomes import (
    JobOutcome,
    Plan,
    RecordedOutcome,
    plan_outcome,
    stored_result,
)
from queues.enums import JobStatus
from queues.models import FailedAttempt, Job

#: What a plain completion (`complete_runs`) wrote, for its effects: the job took its values.
_COMPLETED = Plan(JobStatus.COMPLETED, {}, terminal_failure=False, completed=True)


def record_outcomes(
    queue: QueueCore, finished: Sequence[tuple[Job, JobOutcome]], now: datetime, attempts: list
) -> list[RecordedOutcome | None]:
    """Record the outcomes of `finished` in the caller's transaction: each one's answer
    (None: a stale run, or no run), in order; the history rows of the failures go to
    `attempts`, which the caller inserts."""
    results: list[RecordedOutcome | None] = [None] * len(finished)
    each, plain = _split(finished)
    grouped: list[tuple[int, Plan]] = []  # the outcomes whose effects reach other rows
    with_dependents: set[UUID] = set()
    for token, indexes in each.items():
        _record_each(queue, finished, indexes, token, now, attempts, results, grouped,
                     with_dependents)  # fmt: skip
    _complete(queue, finished, plain, now, results, grouped, with_dependents)
    # The effects once every outcome is written (a child of two completed jobs is released
    # at once, a batch row written once), in the order of `finished`.
    grouped.sort(key=lambda pair: pair[0])
    pairs = [(finished[i][0], plan) for i, plan in grouped]
    answers = effects.record_all(queue.store, pairs, now, with_dependents, type(queue))
    for (i, _), answer in zip(grouped, answers, strict=True):
        results[i] = answer
    return results


def completes_plainly(job: Job, outcome: JobOutcome) -> bool:
    """Whether the outcome is written by the completion statement (`complete_runs`, which
    writes each job's result): a completion of a job with no schedule (whose completion
    would set its next run)."""
    return outcome.kind == "completed" and not job.cron_schedule


def has_effects(job: Job, has_dependents: bool) -> bool:
    """Whether the outcome of `job`'s run changes rows other than its own."""
    return has_dependents or job.batch_id is not None or job.workflow_id is not None


def _record_each(
    queue: QueueCore,
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


def complete_free(
    queue: QueueCore,
    finished: Sequence[tuple[Job, JobOutcome]],
    now: datetime,
    checking: Sequence[Job] = (),
    on_checked: Callable[[set[UUID]], None] | None = None,
) -> tuple[dict[int, RecordedOutcome], set[UUID]]:
    """Write the plain completions of `finished` whose effects reach no other row, of every
    claim, and check the held jobs of `checking` (as `may_start`), with one statement of their
    own (`complete_free_runs`, autocommit): the answers by index, and the ids of the held
    jobs that may start, also told to `on_checked` as soon as they are known. The rest
    (stale runs, jobs with dependents, other outcomes, a job listed twice, a vendor that
    cannot) is left for `record_outcomes`' transaction."""
    # A job listed twice (once, or by two runs: claimed again after its lease was lost)
    # is left for `_complete`, which answers each run for its own token.
    listed = Counter(job.id for job, _ in finished)
    indexes = [
        i
        for i, (job, outcome) in enumerate(finished)
        if job.run_token is not None
        and listed[job.id] == 1
        and completes_plainly(job, outcome)
        and not has_effects(job, False)
    ]
    asked = [job for job in checking if job.run_token is not None]
    if not indexes and not asked:
        return {}, set()
    runs = [
        (finished[i][0].id, finished[i][0].run_token, stored_result(finished[i][1]))
        for i in indexes
    ]
    written, tokens = queue.store.complete_free_runs(runs, now, [job.id for job in asked])
    startable = {job.id for job in asked if tokens.get(job.id) == job.run_token}
    if on_checked is not None and asked:
        on_checked(startable)
    answers: dict[int, RecordedOutcome] = {}
    for i in indexes if written else ():
        job, outcome = finished[i]
        if job.id in written:
            answers[i] = _completed(queue, job, outcome, now)
    return answers, startable


def _complete(queue: QueueCore, finished, indexes, now, results, grouped, with_dependents):
    """The plain completions of `finished` at `indexes`, of every claim: one statement for
    them all; answers and effects as `_record_each`'s. A job listed twice by one run is
    written once, and its effects taken once; listed by two runs (claimed again after its
    lease was lost), each run goes in a statement of its own, so that only the run still
    its own is answered."""
    tokens: dict[UUID, list[UUID]] = {}
    rounds: dict[int, list[int]] = {}
    for i in indexes:
        job = finished[i][0]
        runs_of_job = tokens.setdefault(job.id, [])
        if job.run_token not in runs_of_job:
            runs_of_job.append(job.run_token)
        rounds.setdefault(runs_of_job.index(job.run_token), []).append(i)
    seen: set[UUID] = set()
    for listed in rounds.values():
        _complete_round(queue, finished, listed, now, results, grouped, with_dependents, seen)


def _complete_round(queue, finished, indexes, now, results, grouped, with_dependents, seen):
    """One statement of `_complete`: the runs at `indexes`, each job by one run."""
    runs = [
        (finished[i][0].id, finished[i][0].run_token, stored_result(finished[i][1]))
        for i in indexes
    ]
    written = queue.store.complete_runs(runs, now)
    for i in indexes:
        job, outcome = finished[i]
        if job.id not in written:
            continue  # a stale run: its answer stays None
        results[i] = _completed(queue, job, outcome, now)
        if has_effects(job, written[job.id]) and job.id not in seen:
            seen.add(job.id)
            grouped.append((i, _COMPLETED))
            if written[job.id]:
                with_dependents.add(job.id)


def _completed(queue: QueueCore, job: Job, outcome: JobOutcome, now: datetime) -> RecordedOutcome:
    """`job` takes the values its completion wrote; its end is signalled."""
    job.status, job.completed_at = JobStatus.COMPLETED, now
    job.result = outcome.result
    job.run_token = job.lease_expires_at = None
    signals.run_ended(
        queue.store, type(queue), job, outcome, JobStatus.COMPLETED,
        job.attempts, job.started_at, now,
    )  # fmt: skip
    return RecordedOutcome(status=JobStatus.COMPLETED)


def _split(
    finished: Sequence[tuple[Job, JobOutcome]],
) -> tuple[dict[UUID, list[int]], list[int]]:
    """The indexes of the outcomes written with `_record_each`, by claim token, and those of
    the plain completions (of every claim). A run without a token is in neither (its answer
    is None); a job listed twice is recorded once (a plain completion answers for both)."""
    each: dict[UUID, list[int]] = {}
    plain: list[int] = []
    seen: set[int] = set()
    for index, (job, outcome) in enumerate(finished):
        if job.run_token is None:
            continue
        if completes_plainly(job, outcome):
            plain.append(index)
        elif id(job) not in seen:
            seen.add(id(job))
            each.setdefault(job.run_token, []).append(index)
    return each, plain
