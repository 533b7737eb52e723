"""The SQL store's upkeep through the ORM: the reads and deletes of `Selection`s (purges, the
pruner, the dashboard's bulk operations), the pruner's bounded deletes of old rows (the
trigger-kept counters among them), the counters' roll-up and the rows of bulk operations.
A part of `SqlStore` (`queues.store.sql.store`). See docs/design/maintenance.md."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping
from datetime import datetime, timedelta

from django.db.models import Q, QuerySet
from django.db.models.functions import Coalesce

from queues.models import (
    AttemptCount,
    BulkOperation,
    CompletionCount,
    FailedAttempt,
    HourlyCount,
    ReaperRun,
    WorkerProcess,
)
from queues.store import finished
from queues.store.counters import rollup
from queues.store.match import Group, Selection

#: Each table of `prune_rows`: its model and the time column it is pruned by.
_PRUNED = {
    "failed_attempts": (FailedAttempt, "failed_at"),
    "reaper_runs": (ReaperRun, "ran_at"),
    "worker_processes": (WorkerProcess, "last_heartbeat_at"),
    "completion_counts": (CompletionCount, "minute"),
    "attempt_counts": (AttemptCount, "minute"),
    "hourly_counts": (HourlyCount, "hour"),
}
Status = BulkOperation.Status


def _delete_some(rows: QuerySet, limit: int) -> int:
    """Delete up to `limit` of `rows`: their ids read first, then the condition asked again
    with them (a row that changed meanwhile is kept), so no statement reaches more rows."""
    ids = list(rows.order_by().values_list("pk", flat=True)[:limit])
    if not ids:
        return 0
    # Only the ids: Django's collector reads the rows it deletes (and cascades from them).
    _, deleted = rows.filter(pk__in=ids).only(rows.model._meta.pk.name).delete()
    return deleted.get(rows.model._meta.label, 0)


def page_ids(rows: QuerySet, after=None, limit: int | None = None) -> list:
    """The ids of `rows` in the database's id order: after the id `after` (an indexed read,
    no OFFSET), the first `limit`."""
    if after:
        rows = rows.filter(pk__gt=after)
    ids = rows.order_by("pk").values_list("pk", flat=True)
    return list(ids if limit is None else ids[:limit])


class SqlUpkeep:
    """The upkeep of `SqlStore` (which gives `using`)."""

    # Selections -------------------------------------------------------------------------
    def select_ids(
        self,
        selection: Selection,
        *,
        among: Collection[uuid.UUID] | None = None,
        after: uuid.UUID | str | None = None,
        limit: int | None = None,
    ) -> list[uuid.UUID]:
        rows = selection.rows(self.using)
        if among is not None:
            if not among:
                return []  # MySQL has no empty IN ()
            rows = rows.filter(pk__in=list(among))
        return page_ids(rows, after, limit)

    def count_selected(self, selection: Selection) -> int:
        return selection.rows(self.using).count()

    def delete_selected(self, selection: Selection, limit: int) -> int:
        # Django deletes their edges, history and tags too (on_delete=CASCADE).
        return _delete_some(selection.rows(self.using), limit)

    def finished_groups(self, cutoff: datetime) -> list[Group]:
        return finished.groups_finished_before(self.using, cutoff)

    # The pruner -------------------------------------------------------------------------
    def prune_rows(self, table: str, before: datetime, limit: int) -> int:
        model, column = _PRUNED[table]
        rows = model.objects.using(self.using).filter(**{f"{column}__lt": before})
        return _delete_some(rows, limit)

    def roll_up_counts(self, now: datetime, kept: timedelta) -> int:
        return rollup.roll_up(now, self.using, kept)

    # Bulk operations --------------------------------------------------------------------
    def _bulk(self):
        return BulkOperation.objects.using(self.using)

    def insert_bulk(self, row: BulkOperation) -> None:
        row.save(using=self.using, force_insert=True)

    def get_bulk(self, op_id: int) -> BulkOperation | None:
        return self._bulk().filter(pk=op_id).first()

    def lock_bulk(self, op_id: int) -> BulkOperation | None:
        return self._bulk().select_for_update().filter(pk=op_id).first()

    def update_bulk(self, op_id: int, fields: Mapping, status: str | None = None) -> int:
        rows = self._bulk().filter(pk=op_id)
        if status is not None:
            rows = rows.filter(status=status)
        return rows.update(**fields)

    def claim_bulk(
        self, ran_by: str, now: datetime, lease_expires_at: datetime
    ) -> BulkOperation | None:
        running = Q(status=Status.RUNNING)
        free = (
            Q(status=Status.PENDING)
            | running & Q(lease_expires_at__lt=now)
            | running & Q(claimed_by=ran_by)  # its own, from its last pass
        )
        every = self._bulk()
        # The UPDATE asks `free` again: of two runners that read the same row, one takes it.
        for pk in every.filter(free).order_by("created_at", "id").values_list("pk", flat=True)[:3]:
            taken = every.filter(free, pk=pk).update(
                status=Status.RUNNING, claimed_by=ran_by, lease_expires_at=lease_expires_at,
                started_at=Coalesce("started_at", now),
            )  # fmt: skip
            if taken:
                return every.get(pk=pk)
        return None
