"""Retry, cancel or delete a page of job ids in one transaction, through the engine's method
for many jobs (`retry_jobs`, `cancel_jobs`, `delete_jobs`): what `manage.py jobs` does with a
filter's jobs and a dashboard's "all matching" operation (`queues.ops.bulk`) does, a page at a
time. The rows are locked, then the selection is asked again of them. See
docs/design/maintenance.md."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable

from queues.engine import transitions
from queues.models import Job
from queues.validation import parse_job_id

#: What each action is called, the rule it is checked by, and the engine's method for a page.
ACTIONS = {
    "retry": ("retried", transitions.RETRY, "retry_jobs"),
    "cancel": ("cancelled", transitions.CANCEL, "cancel_jobs"),
    "delete": ("deleted", transitions.DELETE, "delete_jobs"),
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
        matching: set | None = None

        def keep(job: Job) -> bool:
            # Asked by the engine of each locked row: by the first call all the page's rows
            # are locked, so the filter is asked again of them once, then.
            nonlocal matching
            if still is not None and matching is None:
                matching = still(ids)
            return (where is None or where(job)) and (matching is None or job.id in matching)

        result = getattr(queue, method)(ids, where=keep, **(told or {}))
        done = result.deleted if method == "delete_jobs" else result.done
        tally.update(done=len(done), skipped=len(result.refused) + len(result.kept))
        tally["gone"] = result.missing
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
