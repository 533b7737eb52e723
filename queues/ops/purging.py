"""Purging old finished jobs (`manage.py jobs purge`) through the queue's store: what a purge
selects (`Purgeable`, by `queues.store.finished`'s rule), how a selection is read a page of
ids at a time (`pages`), and the purge: each page through `JobQueue.delete_jobs`, then each
finished group whole through `deletion.delete_group`. See docs/design/maintenance.md."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial

from django.db.models import QuerySet

from queues.engine import deletion
from queues.exceptions import InvalidJobTransition, JobNotFound
from queues.models import Job
from queues.store import Store
from queues.store.base import Selection
from queues.store.finished import finished_before, is_finished_before, with_finished_at
from queues.store.sql.upkeep import page_ids

#: Ids per transaction: short locks, bounded memory, and few enough round trips.
BATCH_SIZE = 1000


class Purgeable:
    """The jobs a purge deletes one by one (a `Selection`): finished before `cutoff`, in no
    group (a group is purged whole), not recurring (a schedule's one row, not history)."""

    def __init__(self, cutoff: datetime) -> None:
        self.cutoff = cutoff

    def rows(self, using: str) -> QuerySet:
        return with_finished_at(Job.objects.using(using)).filter(
            finished_before(self.cutoff),
            batch__isnull=True,
            workflow__isnull=True,
            cron_schedule__isnull=True,
        )

    def matches(self, job: Job) -> bool:
        return (
            is_finished_before(job, self.cutoff)
            and job.batch_id is None
            and job.workflow_id is None
            and job.cron_schedule is None
        )


def selected(store: Store, selection: Selection) -> Callable[[object, int], list]:
    """`store`'s read of `selection` a page at a time, as `pages` reads it."""
    return lambda after, limit: store.select_ids(selection, after=after, limit=limit)


def pages(rows, size: int = BATCH_SIZE) -> Iterator[list]:
    """The ids of `rows`, `size` at a time, in the store's id order: each page is one indexed
    read after the last id of the one before (no OFFSET, nothing held between). `rows` is a
    queryset or a read `(after, limit) -> ids` (`selected`)."""
    read = rows if callable(rows) else partial(page_ids, rows)
    last = None
    while True:
        ids = read(last, size)
        if ids:
            yield ids
        if len(ids) < size:
            return
        last = ids[-1]


@dataclass
class PurgeResult:
    deleted: int = 0
    kept: int = 0  # no longer finished before the time when locked (retried meanwhile)
    groups: int = 0  # batches and workflows deleted whole, with their jobs
    group_jobs: int = 0
    skipped_groups: list[str] = field(default_factory=list)  # refused: why


def purge(
    queue,
    cutoff: datetime,
    rows: Selection | None = None,
    *,
    groups: bool = True,
    size: int = BATCH_SIZE,
    progress: Callable[[PurgeResult], None] | None = None,
) -> PurgeResult:
    """Delete `rows` (default: every `Purgeable` job; or a narrower selection of them) through
    `queue.delete_jobs`, a page per transaction, then (with `groups`) the finished groups;
    `progress` after each page and group."""
    result = PurgeResult()
    rows = Purgeable(cutoff) if rows is None else rows
    still = lambda job: is_finished_before(job, cutoff)  # noqa: E731
    for ids in pages(selected(queue.store, rows), size):
        # The rule is asked again of the locked rows: a job retried since its id was read
        # is kept.
        done = queue.delete_jobs(ids, where=still)
        result.deleted += len(done.deleted)
        result.kept += len(done.kept) + len(done.refused)
        if progress is not None:
            progress(result)
    if groups:
        for group in queue.store.finished_groups(cutoff):
            try:
                jobs = group.total_jobs
                deletion.delete_group(queue, group)
            except (InvalidJobTransition, JobNotFound) as exc:
                result.skipped_groups.append(str(exc))
                continue
            result.groups += 1
            result.group_jobs += jobs
            if progress is not None:
                progress(result)
    return result
