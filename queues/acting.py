"""Retry, cancel or delete a page of job ids in one transaction, through the engine: what
`manage.py jobs retry/cancel/delete` does with a filter's jobs and what a dashboard's
"all matching" operation (`queues.bulk`) does, a page at a time.

The page's rows are locked first (in id order, the engine's lock order), then the selection
is asked again of them, so a job that stopped matching since its id was read is left alone;
each job is then acted on by the engine's own method (`retry_job`, `cancel_job`: a savepoint
each, with their dependents, batches and workflows) or, for a delete, `delete_jobs`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable

from . import transitions
from .engine import Match
from .exceptions import InvalidJobTransition, JobNotFound
from .models import Job
from .validation import parse_job_id

#: What each action is called, the rule it is checked by, and the engine's method per job
#: (None: `delete_jobs`, the page at once).
ACTIONS = {
    "retry": ("retried", transitions.RETRY, "retry_job"),
    "cancel": ("cancelled", transitions.CANCEL, "cancel_job"),
    "delete": ("deleted", transitions.DELETE, None),
}


def act_on_page(
    queue,
    name: str,
    ids: Iterable,
    where: Callable[[Job], bool] | None = None,
    still: Callable[[list], set] | None = None,
    told: dict | None = None,
    then: Callable[[Counter], None] | None = None,
) -> Counter:
    """`name` ("retry", "cancel", "delete") on the jobs of `ids`, in one transaction of
    `queue`; `{"done": n, "skipped": n, "gone": n}`. A job is skipped when `where(job)` is
    false for its locked row, or its id is not in `still(ids)` (asked once all are locked),
    or the action does not apply to it. `told` goes to the engine's method (a cancel's
    reason); `then(tally)` runs last in the same transaction (an operation's progress)."""
    method = ACTIONS[name][2]
    ids = sorted({parse_job_id(job_id) for job_id in ids}, key=str)

    def work() -> Counter:
        tally: Counter = Counter()
        locked = queue.store.lock_jobs(Match(ids=ids)) if ids else []
        tally["gone"] = len(ids) - len(locked)
        matching = still([job.id for job in locked]) if still is not None else None

        def keep(job: Job) -> bool:
            return (where is None or where(job)) and (matching is None or job.id in matching)

        if method is None:
            result = queue.delete_jobs([job.id for job in locked], where=keep)
            tally.update(done=len(result.deleted), skipped=len(result.refused) + len(result.kept))
        else:
            for job in sorted(locked, key=lambda job: str(job.id)):
                if not keep(job) or transitions.refusal(ACTIONS[name][1], job) is not None:
                    tally["skipped"] += 1
                    continue
                try:
                    getattr(queue, method)(job.id, **(told or {}))
                except JobNotFound:
                    tally["gone"] += 1
                except InvalidJobTransition:
                    tally["skipped"] += 1
                else:
                    tally["done"] += 1
        if then is not None:
            then(tally)
        return tally

    return queue.store.atomic(work)


def summary(name: str, tally: Counter) -> str:
    text = f"{ACTIONS[name][0]} {tally['done']:,} jobs"
    if tally["skipped"]:
        text += f", skipped {tally['skipped']:,} (changed meanwhile, or the action does not apply)"
    if tally["gone"]:
        text += f", {tally['gone']:,} gone meanwhile"
    return text
