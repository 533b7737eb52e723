"""Stores: the pruner's bounded deletes of old rows (the trigger-kept counters are the SQL
store's alone), and the rows of bulk operations: inserted, read, locked, written under a
condition, and claimed by one runner at a time."""

from __future__ import annotations

from datetime import timedelta

import pytest

from queues.enums import AttemptEnd
from queues.models import BulkOperation, CompletionCount, FailedAttempt, ReaperRun
from queues.store.base import PRUNED_TABLES
from queues.store.memory.store import MemoryStore
from tests.queues.conftest import unique_queue
from tests.queues.store.conftest import T0, insert, job

DAY = timedelta(days=1)
Status = BulkOperation.Status


def failure(job_id, when) -> FailedAttempt:
    return FailedAttempt(
        job_id=job_id, attempt=1, failed_at=when, ended_by=AttemptEnd.ERROR, status="Pending"
    )


def test_old_history_rows_are_pruned_a_batch_at_a_time(store):
    name = unique_queue("prune_history")
    a, b = insert(store, job(name), job(name))
    old = [failure(a, T0 - 3 * DAY), failure(b, T0 - 2 * DAY), failure(a, T0 - 2 * DAY)]
    store.insert_attempts([*old, failure(a, T0)])

    assert store.prune_rows("failed_attempts", T0 - DAY, 2) == 2
    assert store.prune_rows("failed_attempts", T0 - DAY, 2) == 1
    assert store.prune_rows("failed_attempts", T0 - DAY, 2) == 0
    assert [row.failed_at for row in store.find_attempts(a)] == [T0]
    assert store.find_attempts(b) == []


def test_old_reaper_runs_are_pruned_and_a_new_one_never_takes_a_pruned_id(store):
    runs = [ReaperRun(ran_at=T0 - days * DAY) for days in (3, 2, 0)]
    for run in runs:
        store.insert_reaper_run(run)

    def undone():
        store.prune_rows("reaper_runs", T0 + DAY, 10)
        raise RuntimeError("undo")

    with pytest.raises(RuntimeError):
        store.atomic(undone)
    assert store.prune_rows("reaper_runs", T0 - DAY, 1) == 1
    assert store.prune_rows("reaper_runs", T0 - DAY, 5) == 1
    later = ReaperRun(ran_at=T0)
    store.insert_reaper_run(later)
    assert len({run.id for run in [*runs, later]}) == 4
    assert store.prune_rows("reaper_runs", T0 + DAY, 5) == 2  # the kept one and the new one


def test_the_counter_tables_are_pruned_in_sql_and_empty_in_memory(store):
    if isinstance(store, MemoryStore):
        for table in ("completion_counts", "attempt_counts", "hourly_counts"):
            assert store.prune_rows(table, T0 + 365 * DAY, 10) == 0
        assert store.roll_up_counts(T0, DAY) == 0
    else:
        old = CompletionCount.objects.create(queue_name="q", minute=T0 - DAY, n=3)
        kept = CompletionCount.objects.create(queue_name="q", minute=T0, n=2)
        assert store.prune_rows("completion_counts", T0 - timedelta(minutes=10), 10) == 1
        assert list(CompletionCount.objects.values_list("id", flat=True)) == [kept.id]
        assert not CompletionCount.objects.filter(id=old.id).exists()
    with pytest.raises(KeyError):
        store.prune_rows("jobs", T0, 10)
    assert set(PRUNED_TABLES) >= {"failed_attempts", "reaper_runs", "worker_processes"}


# Bulk operations ---------------------------------------------------------------------------
def operation(created_at=T0, **fields) -> BulkOperation:
    return BulkOperation(
        action="retry", filter={"queue": "q"}, created_by="ops", created_at=created_at, **fields
    )


def test_an_operation_is_inserted_read_and_handed_out_as_a_copy(store):
    op = operation(total=3)
    store.insert_bulk(op)
    assert op.pk is not None and store.get_bulk(op.pk + 1000) is None
    read = store.get_bulk(op.pk)
    assert (read.action, read.filter, read.total) == ("retry", {"queue": "q"}, 3)
    assert read.status == Status.PENDING
    read.filter["queue"] = "changed after the read"
    op.total = 99  # changed after the insert
    assert store.get_bulk(op.pk).filter == {"queue": "q"} and store.get_bulk(op.pk).total == 3
    assert store.atomic(lambda: store.lock_bulk(op.pk)).pk == op.pk
    assert store.atomic(lambda: store.lock_bulk(op.pk + 1000)) is None


def test_an_operation_is_written_only_in_the_status_asked(store):
    op = operation()
    store.insert_bulk(op)
    assert store.update_bulk(op.pk, {"cancel_requested": True}, status=Status.RUNNING) == 0
    assert store.get_bulk(op.pk).cancel_requested is False
    assert store.update_bulk(op.pk, {"status": Status.CANCELLED}, status=Status.PENDING) == 1
    assert store.update_bulk(op.pk, {"done": 5, "cursor": "abc"}) == 1
    read = store.get_bulk(op.pk)
    assert (read.status, read.done, read.cursor) == (Status.CANCELLED, 5, "abc")
    assert store.update_bulk(op.pk + 1000, {"done": 1}) == 0


def test_a_claim_takes_the_oldest_free_operation_for_one_runner(store):
    first, second = operation(created_at=T0), operation(created_at=T0 + timedelta(seconds=1))
    done = operation(created_at=T0 - DAY, status=Status.COMPLETED)
    for op in (second, done, first):
        store.insert_bulk(op)
    lease = timedelta(seconds=60)

    a = store.claim_bulk("a", T0, T0 + lease)
    assert (a.pk, a.status, a.claimed_by) == (first.pk, Status.RUNNING, "a")
    assert (a.started_at, a.lease_expires_at) == (T0, T0 + lease)
    assert store.claim_bulk("b", T0, T0 + lease).pk == second.pk
    assert store.claim_bulk("c", T0, T0 + lease) is None  # both leased to others
    # Its own again (its next pass): the lease renewed, the start kept.
    again = store.claim_bulk("a", T0 + DAY / 2, T0 + DAY)
    assert (again.pk, again.started_at, again.lease_expires_at) == (first.pk, T0, T0 + DAY)
    # A runner that died: its lease expires, and another takes it over.
    later = T0 + 2 * lease
    taken = store.claim_bulk("c", later, later + lease)
    assert (taken.pk, taken.claimed_by, taken.started_at) == (second.pk, "c", T0)
    assert store.get_bulk(done.pk).status == Status.COMPLETED
