"""Stores: unique slots (one job per slot, any number without one) and declared jobs."""

from __future__ import annotations

import pytest
from django.db import IntegrityError

from queues.store import Match
from tests.queues.conftest import unique_queue
from tests.queues.store.conftest import T0, insert, job, one


def test_a_taken_slot_is_an_integrity_error_and_the_transaction_goes_on(store):
    name = unique_queue("slot_taken")
    holder = job(name, unique_slot="a" * 64)
    insert(store, holder)
    fresh, again = job(name), job(name, unique_slot="a" * 64)
    after = job(name, unique_slot="b" * 64)

    def work():
        with pytest.raises(IntegrityError):
            insert(store, fresh, again)
        insert(store, after)  # the transaction is still usable

    store.atomic(work)
    assert one(store, fresh.id) is None and one(store, again.id) is None
    assert one(store, after.id).unique_slot == "b" * 64


def test_two_jobs_of_one_slot_in_one_insert_are_refused(store):
    name = unique_queue("slot_twice")
    a, b = job(name, unique_slot="c" * 64), job(name, unique_slot="c" * 64)
    with pytest.raises(IntegrityError):
        store.atomic(lambda: insert(store, a, b))
    assert store.find_jobs(Match(queue_name=name)) == []


def test_jobs_without_a_slot_are_any_number(store):
    name = unique_queue("slot_none")
    insert(store, job(name), job(name), job(name))
    assert len(store.find_jobs(Match(queue_name=name))) == 3


def test_jobs_are_found_locked_and_updated_by_slot(store):
    name = unique_queue("slot_match")
    a, b, c = job(name, unique_slot="d" * 64), job(name, unique_slot="e" * 64), job(name)
    insert(store, a, b, c)
    by_slot = Match(unique_slots=["d" * 64, "e" * 64, "f" * 64])
    assert {j.id for j in store.find_jobs(by_slot)} == {a.id, b.id}
    locked = store.atomic(lambda: store.lock_jobs(Match(ids=[a.id, c.id], unique_slots=["d" * 64])))
    assert [j.id for j in locked] == [a.id]
    assert store.update_jobs(Match(unique_slots=["d" * 64]), {"unique_slot": None}) == 1
    insert(store, job(name, unique_slot="d" * 64))  # a cleared slot is free again


def test_a_slot_another_job_has_cannot_be_written(store):
    name = unique_queue("slot_update")
    a, b = job(name, unique_slot="g" * 64), job(name)
    insert(store, a, b)
    with pytest.raises(IntegrityError):
        store.atomic(lambda: store.update_jobs(Match(ids=[b.id]), {"unique_slot": "g" * 64}))
    assert one(store, b.id).unique_slot is None
    store.update_jobs(Match(ids=[a.id]), {"unique_slot": "g" * 64})  # its own: unchanged


def test_declared_jobs_are_the_jobs_with_a_schedule_name(store):
    name = unique_queue("declared")
    cron = {"cron_schedule": "0 0 * * * *", "recurring": True, "next_run_at": T0}
    enabled = job(name, schedule_name=f"{name}-a", **cron)
    disabled = job(name, schedule_name=f"{name}-b", **{**cron, "recurring": False})
    in_code = job(name, **cron)
    insert(store, enabled, disabled, in_code, job(name))
    declared = {j.id for j in store.declared_jobs() if j.queue_name == name}
    assert declared == {enabled.id, disabled.id}
