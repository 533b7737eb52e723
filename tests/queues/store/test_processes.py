"""Stores: the worker-process registry (a `runworker`'s row): registered, beaten (False once
the row is gone), unregistered, handed out as a copy, undone with its transaction, and the
pruner's deletes of the processes that stopped beating."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.db import IntegrityError

from queues.models import WorkerProcess
from tests.queues.store.conftest import T0

MINUTE = timedelta(minutes=1)


def process(beat_at=T0, **fields) -> WorkerProcess:
    """A process's row as `runworker` registers it."""
    given = {
        "hostname": "host", "pid": 42, "queues": ["a", "b"], "batch_size": 4, "concurrency": 2,
        "settings": {"batch_size": 4, "queues": ["a", "b"]},
    }  # fmt: skip
    return WorkerProcess(started_at=beat_at, last_heartbeat_at=beat_at, **(given | fields))


def test_a_process_is_registered_as_given_and_once(store):
    row = process()
    store.register_process(row)
    read = store.get_process(row.id)
    assert (read.hostname, read.pid, read.batch_size, read.concurrency) == ("host", 42, 4, 2)
    assert (read.queues, read.settings) == (["a", "b"], {"batch_size": 4, "queues": ["a", "b"]})
    assert (read.started_at, read.last_heartbeat_at) == (T0, T0)
    assert (read.jobs_held, read.jobs_running, read.jobs_processed) == (0, 0, 0)
    assert store.get_process(uuid.uuid4()) is None

    again = process(pid=43, id=row.id)
    with pytest.raises(IntegrityError):
        store.atomic(lambda: store.register_process(again))
    assert store.get_process(row.id).pid == 42


def test_what_goes_in_and_comes_out_is_a_copy(store):
    row = process()
    store.register_process(row)
    row.queues.append("changed after the register")
    row.settings["batch_size"] = 99
    read = store.get_process(row.id)
    read.queues.append("changed after the read")
    assert store.get_process(row.id).queues == ["a", "b"]
    assert store.get_process(row.id).settings["batch_size"] == 4


def test_a_beat_writes_the_counts_and_the_time_until_the_row_is_gone(store):
    row, other = process(), process(pid=43)
    store.register_process(row)
    store.register_process(other)

    assert store.beat_process(row.id, 3, 1, 17, T0 + MINUTE) is True
    read = store.get_process(row.id)
    assert (read.jobs_held, read.jobs_running, read.jobs_processed) == (3, 1, 17)
    assert (read.started_at, read.last_heartbeat_at) == (T0, T0 + MINUTE)
    untouched = store.get_process(other.id)
    assert (untouched.jobs_processed, untouched.last_heartbeat_at) == (0, T0)

    store.unregister_process(row.id)
    assert store.get_process(row.id) is None
    assert store.beat_process(row.id, 0, 0, 18, T0 + 2 * MINUTE) is False
    assert store.get_process(row.id) is None  # a beat does not register it again
    store.unregister_process(row.id)  # gone already: nothing
    assert store.get_process(other.id) is not None


def test_a_pruned_process_beats_false_and_registers_again(store):
    row = process()
    store.register_process(row)
    assert store.prune_rows("worker_processes", T0 + MINUTE, 10) == 1
    assert store.beat_process(row.id, 1, 1, 5, T0 + 2 * MINUTE) is False
    row.last_heartbeat_at = T0 + 2 * MINUTE
    store.register_process(row)  # what the process does when its beat finds no row
    assert store.beat_process(row.id, 1, 1, 5, T0 + 3 * MINUTE) is True
    assert store.get_process(row.id).last_heartbeat_at == T0 + 3 * MINUTE


def test_the_pruner_deletes_the_dead_processes_and_keeps_the_live_ones(store):
    dead = [process(beat_at=T0 - timedelta(hours=hours), pid=hours) for hours in (1, 2, 3)]
    live = process(beat_at=T0 - MINUTE, pid=100)
    for row in (*dead, live):
        store.register_process(row)
    store.beat_process(dead[0].id, 0, 0, 1, T0 - timedelta(minutes=30))  # still too old
    cutoff = T0 - timedelta(minutes=10)

    assert store.prune_rows("worker_processes", cutoff, 2) == 2
    assert store.prune_rows("worker_processes", cutoff, 2) == 1
    assert store.prune_rows("worker_processes", cutoff, 2) == 0
    assert all(store.get_process(row.id) is None for row in dead)
    assert store.get_process(live.id).pid == 100
    assert store.beat_process(live.id, 0, 0, 0, T0) is True


def test_the_registry_is_undone_with_its_transaction(store):
    kept, doomed = process(), process(pid=43)
    store.register_process(kept)

    def undone():
        store.register_process(doomed)
        store.beat_process(kept.id, 5, 5, 5, T0 + MINUTE)
        store.unregister_process(kept.id)
        raise RuntimeError("undo")

    with pytest.raises(RuntimeError):
        store.atomic(undone)
    assert store.get_process(doomed.id) is None
    read = store.get_process(kept.id)
    assert (read.jobs_held, read.last_heartbeat_at) == (0, T0)

    def pruned_and_undone():
        store.prune_rows("worker_processes", T0 + MINUTE, 10)
        raise RuntimeError("undo")

    with pytest.raises(RuntimeError):
        store.atomic(pruned_and_undone)
    assert store.get_process(kept.id) is not None


def test_the_live_processes_are_those_that_beat_since_newest_first(store):
    old, new, newest = process(), process(pid=43), process(pid=44)
    for row, at in ((old, T0), (new, T0 + MINUTE), (newest, T0 + 2 * MINUTE)):
        row.last_heartbeat_at = at
        store.register_process(row)
    live = store.live_processes(T0 + MINUTE, 10)
    mine = [row.pid for row in live if row.id in {old.id, new.id, newest.id}]
    assert mine == [44, 43]
    assert len(store.live_processes(T0 + MINUTE, 1)) == 1
    live[0].queues.append("changed after the read")
    assert store.get_process(live[0].id).queues == ["a", "b"]
