"""The archive's side of the all-queues jobs page: the archived jobs a `SearchFilter` matches,
by the archive's own indexed columns (id; queue, status and finished time; priority and
created time checked along). A filter on what the archive packs (payload or error text, a
tag) finds none there. Read-only, bounded. See docs/design/reads.md."""

from __future__ import annotations

import heapq
from datetime import datetime

from django.db.models import QuerySet

from queues.models import ArchivedJob
from queues.reads.search import SearchFilter
from queues.store.archived import ARCHIVABLE

#: The filter's time bounds, as the archive's columns compare them.
_TIMES = {
    "created_from": "created_at__gte",
    "created_to": "created_at__lt",
    "finished_from": "finished_at__gte",
    "finished_to": "finished_at__lt",
}
#: The newest archived matches a page shows: the archive is looked in, not paged through.
ARCHIVE_SHOWN = 20


def searches_archive(flt: SearchFilter) -> bool:
    """Whether the archive's columns can answer the filter: an id, or a queue and nothing
    that only the packed rest of a row holds."""
    packed = flt.payload or flt.error or flt.tag or flt.job_ids
    return not flt.problems and not packed and bool(flt.job_id or flt.queue)


def archived_matches(
    flt: SearchFilter, using: str = "default", limit: int = ARCHIVE_SHOWN
) -> list[ArchivedJob]:
    """The archived jobs `flt` matches, last finished first (the first `limit`): by id, or
    one walk of the (queue, status, finished_at) index per status, merged."""
    if not searches_archive(flt):
        return []
    rows = ArchivedJob.objects.using(using).defer("data")
    if flt.job_id:
        return list(_narrowed(rows.filter(id=flt.job_id), flt)[:1])
    statuses = [flt.status] if flt.status else sorted(ARCHIVABLE)
    walks = [
        _narrowed(rows.filter(queue_name=flt.queue, status=status), flt).order_by(
            "-finished_at", "-id"
        )[:limit]
        for status in statuses
    ]
    found = heapq.merge(*(list(walk) for walk in walks), key=_newest)
    return list(found)[:limit]


def _newest(row: ArchivedJob) -> tuple:
    return (-row.finished_at.timestamp(), str(row.id))


def _narrowed(rows: QuerySet, flt: SearchFilter) -> QuerySet:
    if flt.queue:
        rows = rows.filter(queue_name=flt.queue)
    if flt.status:
        rows = rows.filter(status=flt.status)
    if flt.priority is not None:
        rows = rows.filter(priority=flt.priority)
    for name, lookup in _TIMES.items():
        if getattr(flt, name):
            rows = rows.filter(**{lookup: datetime.fromisoformat(getattr(flt, name))})
    return rows
