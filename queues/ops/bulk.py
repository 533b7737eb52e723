"""Retry, cancel or delete "all N matching" as a background operation: a `BulkOperation` row
made by the dashboard (who, the filter, the action, the count it confirmed), carried out by
`BulkRunner`, a maintenance service of every `runworker` process, a page of ids per
transaction. Every row is read and written through the queue's store, so a runner works on a
`TestQueue` too. See docs/design/maintenance.md."""

from __future__ import annotations

import logging
import os
import socket
import time
from collections import Counter
from datetime import timedelta

from django.db import InterfaceError, OperationalError
from django.utils import timezone

from queues.models import BulkOperation
from queues.ops import acting
from queues.ops.purging import BATCH_SIZE, pages
from queues.reads.search import SearchFilter
from queues.store import Store, sql_store
from queues.text import storable_or_none

logger = logging.getLogger("queues.bulk")
Status = BulkOperation.Status
DEFAULT_INTERVAL = timedelta(seconds=2)
#: How long a pass works before it hands the maintenance thread back (reaper, pruner).
DEFAULT_BUDGET = timedelta(seconds=5)
#: A running operation whose runner renewed nothing for this long is taken over.
LEASE = timedelta(seconds=60)


def start(
    flt: SearchFilter, action: str, user: str, using: str = "default", *, store: Store | None = None
) -> BulkOperation:
    """A pending operation of `action` on the jobs of `flt`, counted now, in `store` (default:
    the SQL store of the database `using`)."""
    if action not in acting.ACTIONS:
        raise ValueError(f"no bulk action {action!r}")
    store = store or sql_store(using)
    total = store.count_selected(flt)
    op = BulkOperation(
        action=action, filter=flt.to_json(), description=flt.describe(), created_by=user,
        total=total,
    )  # fmt: skip
    store.insert_bulk(op)
    logger.info("bulk %s #%s by %s: %s jobs match (%s)", action, op.pk, user, total, op.description)
    return op


def cancel(op: BulkOperation, user: str, store: Store | None = None) -> None:
    """Stop `op` after the page it is on (a pending one at once); `store` as `start`'s
    (default: the SQL store of the row's database)."""
    store = store or sql_store(op._state.db or "default")
    now = timezone.now()
    cancelled = {"status": Status.CANCELLED, "cancel_requested": True, "finished_at": now}
    store.update_bulk(op.pk, cancelled, status=Status.PENDING)
    store.update_bulk(op.pk, {"cancel_requested": True}, status=Status.RUNNING)
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
        store, now = self.queue.store, self.queue.now()
        op = store.claim_bulk(self.ran_by, now, now + LEASE)
        if op is None:
            return None
        try:
            self._work(op)
        except (InterfaceError, OperationalError):
            raise  # the database's fault: the loop retries, the lease lets another go on
        except Exception as exc:
            logger.exception("bulk %s #%s failed", op.action, op.pk)
            store.update_bulk(op.pk, {
                "status": Status.FAILED, "error": storable_or_none(str(exc)) or type(exc).__name__,
                "finished_at": self.queue.now(),
            })  # fmt: skip
        return store.get_bulk(op.pk) or op

    def _work(self, op: BulkOperation) -> None:
        if op.cancel_requested:
            self._finish(op, Status.CANCELLED)
            return
        store = self.queue.store
        search = SearchFilter.from_json(op.filter)
        deadline = time.monotonic() + self.budget.total_seconds()
        cancel_reason = f"Cancelled by {op.created_by} in the dashboard (bulk operation {op.pk})"
        told = {"reason": cancel_reason} if op.action == "cancel" else {}

        def read(after, limit: int) -> list:  # on from the cursor of the last pass
            return store.select_ids(search, after=after or op.cursor, limit=limit)

        def still(locked: list) -> set:
            return set(store.select_ids(search, among=locked))

        for ids in pages(read, self.batch_size):
            last = len(ids) < self.batch_size

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
        store = self.queue.store
        row = store.lock_bulk(op.pk)
        if row is None or row.claimed_by != self.ran_by or row.status != Status.RUNNING:
            raise _Stopped(cancelled=False)
        if row.cancel_requested:
            raise _Stopped(cancelled=True)
        now = self.queue.now()
        fields = {
            "done": row.done + tally["done"], "skipped": row.skipped + tally["skipped"],
            "gone": row.gone + tally["gone"], "cursor": str(last_id),
            "lease_expires_at": now + LEASE,
        }  # fmt: skip
        if last:
            fields.update(status=Status.COMPLETED, finished_at=now)
        store.update_bulk(op.pk, fields)
        if last:
            vars(row).update(fields)
            self._log_end(row)

    def _finish(self, op: BulkOperation, status: str) -> None:
        store = self.queue.store
        ended = {"status": status, "finished_at": self.queue.now()}
        store.update_bulk(op.pk, ended, status=Status.RUNNING)
        row = store.get_bulk(op.pk)
        if row is not None:
            self._log_end(row)

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
