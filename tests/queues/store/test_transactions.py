"""Stores: transactions, taken ids and locks."""

from __future__ import annotations

import threading
import time
import uuid

import pytest
from django.db import IntegrityError, connection

from queues.api import JobPriority
from queues.models import Batch, QueuePause, Workflow
from queues.store import Match
from tests.queues.conftest import unique_queue
from tests.queues.store.conftest import T0, insert, job, one


class Boom(Exception):
    pass


def test_atomic_returns_what_its_function_returns_and_keeps_its_writes(store):
    name = unique_queue("atomic")
    assert store.atomic(lambda: insert(store, job(name))) and store.count_jobs(name)["Pending"] == 1


def test_a_transaction_that_raises_leaves_nothing_of_its_writes(store):
    name = unique_queue("rollback")
    kept, child = job(name), job(name)
    insert(store, kept)
    batch = Batch(id=uuid.uuid4(), name="b", created_at=T0)

    def work():
        store.insert_group(batch)
        child.depends_on = [str(kept.id)]
        insert(store, child)
        store.update_jobs(Match(ids=[kept.id]), {"priority": JobPriority.CRITICAL})
        store.pause(QueuePause(queue_name=name, paused_at=T0))
        store.atomic(lambda: store.delete_jobs(Match(ids=[kept.id])))  # nested: part of it
        raise Boom

    with pytest.raises(Boom):
        store.atomic(work)
    assert one(store, kept.id).priority == JobPriority.NORMAL
    assert one(store, child.id) is None and store.dependents([kept.id]) == set()
    assert store.get_group(Batch, batch.id) is None
    assert not store.is_paused(name)


def test_a_taken_id_is_an_integrity_error_and_the_insert_writes_nothing(store):
    name = unique_queue("taken")
    taken = job(name)
    insert(store, taken)
    again, fresh = job(name, payload={"again": 1}), job(name)
    again.id = taken.id
    with pytest.raises(IntegrityError):
        store.atomic(lambda: insert(store, fresh, again))
    assert one(store, fresh.id) is None and one(store, taken.id).payload == {}
    workflow = Workflow(id=uuid.uuid4(), name="w", created_at=T0)
    store.insert_group(workflow)
    with pytest.raises(IntegrityError):
        store.atomic(lambda: store.insert_group(Workflow(id=workflow.id, name="w2")))
    assert store.get_group(Workflow, workflow.id).name == "w"


def test_locked_rows_stay_locked_until_the_transaction_ends(store):
    name = unique_queue("lock")
    job_id = insert(store, job(name))[0]
    locked, trying = threading.Event(), threading.Event()
    order: list[str] = []

    def holder():
        def work():
            store.lock_jobs(Match(ids=[job_id]))
            locked.set()
            trying.wait(10)
            time.sleep(0.2)  # the other transaction asks for the lock meanwhile
            order.append("holder commits")

        store.atomic(work)
        connection.close()

    def waiter():
        locked.wait(10)
        trying.set()
        store.atomic(lambda: store.lock_jobs(Match(ids=[job_id])))
        order.append("waiter locked")
        connection.close()

    threads = [threading.Thread(target=holder), threading.Thread(target=waiter)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert order == ["holder commits", "waiter locked"]
