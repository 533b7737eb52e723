"""Retry, cancel or delete "all N matching" as a background operation: a `BulkOperation`
row made by the dashboard (who, the filter, the action, the count it confirmed), carried out
by `BulkRunner`, a maintenance service of every `runworker` process.

Why a runworker service: a deployment already runs `runworker` (the reaper and the pruner
live there), so no new process, queue or scheduler is needed, and the request only writes
one row. Why not a job on a queue of its own: a worker runs only the queues it is told to,
so it would need a worker started for that queue, and a handler that runs for minutes would
hold its lease and a slot. The runner takes an operation with a conditional UPDATE (pending,
or running with an expired lease: its runner died), then works for at most `budget` seconds
per pass, a page of `batch_size` ids per transaction (`acting.act_on_page`: rows locked,
the filter asked again of them by the database, the engine's method for the page), and each
page's transaction also advances the operation's cursor and counts, so a runner that dies
mid-way leaves it exactly where its last page committed, for the next one to go on.
A cancel is a flag read under the row's lock at each page: at most one more page is done.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections import Counter
from datetime import timedelta

from django.db import InterfaceError, OperationalError
from django.db.models import Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from queues.models import BulkOperation
from queues.ops import acting
from queues.ops.purging import BATCH_SIZE, pages
from queues.reads.search import SearchFilter
from queues.text import storable_or_none

logger = logging.getLogger("queues.bulk")
Status = BulkOperation.Status
DEFAULT_INTERVAL = timedelta(seconds=2)
#: How long a pass works before it hands the maintenance thread back (reaper, pruner).
DEFAULT_BUDGET = timedelta(seconds=5)
#: A running operation whose runner renewed nothing for this long is taken over.
LEASE = timedelta(seconds=60)


def start(flt: SearchFilter, action: str, user: str, using: str = "default") -> BulkOperation:
    """A pending operation of `action` on the jobs of `flt`, counted now."""
    if action not in acting.ACTIONS:
        raise ValueError(f"no bulk action {action!r}")
    total = flt.rows(using).count()
    op = BulkOperation.objects.using(using).create(
        action=action, filter=flt.to_json(), description=flt.describe(), created_by=user,
        total=total,
    )  # fmt: skip
    logger.info("bulk %s #%s by %s: %s jobs match (%s)", action, op.pk, user, total, op.description)
    return op


def cancel(op: BulkOperation, user: str) -> None:
    """Stop `op` after the page it is on (a pending one at once)."""
    rows = BulkOperation.objects.using(op._state.db).filter(pk=op.pk)
    now = timezone.now()
    rows.filter(status=Status.PENDING).update(
        status=Status.CANCELLED, cancel_requested=True, finished_at=now
    )
    rows.filter(status=Status.RUNNING).update(cancel_requested=True)
    logger.info("bulk %s #%s cancelled by %s", op.action, op.pk, user)


class BulkRunner:
    def __init__(
        self,
        queue,
        interval: timedelta = DEFAULT_INTERVAL,
        budget: timedelta = DEFAULT_BUDGET,
        batch_size: int = BATCH_SIZE,
        ran_by: str = "",
    ):
        self.queue = queue
        self.interval = interval
        self.budget = budget
        self.batch_size = batch_size
        self.ran_by = ran_by or f"{socket.gethostname()}:{os.getpid()}"

    def run_once(self) -> BulkOperation | None:
        """Take one operation and work on it for up to `budget`; it, or None."""
        op = self._claim()
        if op is None:
            return None
        try:
            self._work(op)
        except (InterfaceError, OperationalError):
            raise  # the database's fault: the loop retries, the lease lets another go on
        except Exception as exc:
            logger.exception("bulk %s #%s failed", op.action, op.pk)
            self._rows(op).update(
                status=Status.FAILED, error=storable_or_none(str(exc)) or type(exc).__name__,
                finished_at=timezone.now(),
            )  # fmt: skip
        op.refresh_from_db()
        return op

    def _rows(self, op: BulkOperation):
        return BulkOperation.objects.using(self.queue.using).filter(pk=op.pk)

    def _claim(self) -> BulkOperation | None:
        now = timezone.now()
        running = Q(status=Status.RUNNING)
        free = (
            Q(status=Status.PENDING)
            | running & Q(lease_expires_at__lt=now)
            | running & Q(claimed_by=self.ran_by)  # its own, from its last pass
        )
        every = BulkOperation.objects.using(self.queue.using)
        for pk in every.filter(free).order_by("created_at", "id").values_list("pk", flat=True)[:3]:
            taken = every.filter(free, pk=pk).update(
                status=Status.RUNNING, claimed_by=self.ran_by, lease_expires_at=now + LEASE,
                started_at=Coalesce("started_at", now),
            )  # fmt: skip
            if taken:
                return every.get(pk=pk)
        return None

    def _work(self, op: BulkOperation) -> None:
        if op.cancel_requested:
            self._finish(op, Status.CANCELLED)
            return
        flt = SearchFilter.from_json(op.filter)
        rows = flt.rows(self.queue.using)
        if op.cursor:
            rows = rows.filter(pk__gt=op.cursor)
        deadline = time.monotonic() + self.budget.total_seconds()
        cancel_reason = f"Cancelled by {op.created_by} in the dashboard (bulk operation {op.pk})"
        told = {"reason": cancel_reason} if op.action == "cancel" else {}
        for ids in pages(rows, self.batch_size):
            last = len(ids) < self.batch_size

            def still(locked: list) -> set:
                matching = flt.rows(self.queue.using).filter(pk__in=locked)
                return set(matching.values_list("pk", flat=True))

            def then(tally: Counter, ids=ids, last=last) -> None:
                self._advance(op, tally, ids[-1], last)

            try:
                acting.act_on_page(self.queue, op.action, ids, still=still, told=told, then=then)
            except _Stopped as stop:
                if stop.cancelled:
                    self._finish(op, Status.CANCELLED)
                return
            if last:
                return
            if time.monotonic() > deadline:
                return
        self._finish(op, Status.COMPLETED)

    def _advance(self, op: BulkOperation, tally: Counter, last_id, last: bool) -> None:
        """In the page's transaction: the operation's row locked, its counts and cursor moved
        on (so a page is counted once, whatever happens after); stop if it was cancelled or
        another runner took it over."""
        row = self._rows(op).select_for_update().get()
        if row.claimed_by != self.ran_by or row.status != Status.RUNNING:
            raise _Stopped(cancelled=False)
        if row.cancel_requested:
            raise _Stopped(cancelled=True)
        now = timezone.now()
        row.done += tally["done"]
        row.skipped += tally["skipped"]
        row.gone += tally["gone"]
        row.cursor = str(last_id)
        row.lease_expires_at = now + LEASE
        if last:
            row.status, row.finished_at = Status.COMPLETED, now
        row.save()
        if last:
            self._log_end(row)

    def _finish(self, op: BulkOperation, status: str) -> None:
        self._rows(op).filter(status=Status.RUNNING).update(
            status=status, finished_at=timezone.now()
        )
        self._log_end(self._rows(op).get())

    def _log_end(self, row: BulkOperation) -> None:
        logger.info(
            "bulk %s #%s by %s %s: %s", row.action, row.pk, row.created_by, row.status,
            acting.summary(row.action, Counter(done=row.done, skipped=row.skipped, gone=row.gone)),
        )  # fmt: skip


class _Stopped(Exception):
    """The page's transaction is undone: the operation was cancelled or taken over."""

    def __init__(self, cancelled: bool):
        super().__init__()
        self.cancelled = cancelled
