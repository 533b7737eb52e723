"""Stores: the fenced writes of runs and the expired leases."""

from __future__ import annotations

import uuid
from datetime import timedelta

from queues import enums
from queues.api import JobStatus
from queues.models import Batch, QueuePause
from tests.queues.conftest import unique_queue
from tests.queues.store.conftest import LEASE, T0, claim, insert, job, one


def _runs(store, name: str, n: int, **fields):
    token = uuid.uuid4()
    insert(store, *(job(name, age=n - i, **fields) for i in range(n)))
    return token, [j.id for j in claim(store, name, token=token)]


def test_start_runs_marks_the_runs_still_theirs_and_tells_pause_and_failed_batch(store):
    name = unique_queue("start")
    batch = Batch(
        id=uuid.uuid4(), name="b", failure_mode=enums.PartialFailureMode.FAIL_FAST, created_at=T0
    )
    store.insert_group(batch)
    token, ids = _runs(store, name, 2, batch_id=batch.id)
    later = T0 + timedelta(seconds=5)
    started = store.atomic(lambda: store.start_runs([*ids, uuid.uuid4()], token, later))
    assert started == dict.fromkeys(ids, (False, False))
    assert (one(store, ids[0]).started_at, one(store, ids[0]).last_heartbeat_at) == (later, later)
    assert store.atomic(lambda: store.start_runs(ids, uuid.uuid4(), later)) == {}
    store.pause(QueuePause(queue_name=name, paused_at=T0))
    store.update_group(Batch, batch.id, {"status": enums.BatchStatus.FAILED})
    assert store.atomic(lambda: store.start_runs(ids[:1], token, later)) == {ids[0]: (True, True)}


def test_startable_runs_are_the_running_ones_on_queues_not_paused_with_their_tokens(store):
    name = unique_queue("may_start")
    token, (a, b) = _runs(store, name, 2)
    other_token, (c,) = _runs(store, unique_queue("may_start_other"), 1)
    nobody = uuid.uuid4()
    assert store.startable_runs([a, b, c, nobody]) == {a: token, b: token, c: other_token}
    store.atomic(lambda: store.complete_runs([(b, token, None)], T0))
    assert store.startable_runs([a, b]) == {a: token}, "its run ended"
    store.pause(QueuePause(queue_name=name, paused_at=T0))
    assert store.startable_runs([a, c]) == {c: other_token}, "only its own queue's pause"
    assert store.startable_runs([]) == {}
    assert one(store, a).started_at == T0, "a read: the claim's start stands"


def test_startable_runs_leave_out_the_jobs_of_a_failed_fail_fast_batch(store):
    batches = {
        mode: Batch(id=uuid.uuid4(), name=mode, failure_mode=mode, created_at=T0)
        for mode in (enums.PartialFailureMode.FAIL_FAST, enums.PartialFailureMode.COLLECT_ERRORS)
    }
    runs = {}
    for mode, batch in batches.items():
        store.insert_group(batch)
        runs[mode] = _runs(store, unique_queue("startable_batch"), 1, batch_id=batch.id)
    (fast_token, (fast,)), (other_token, (other,)) = runs.values()
    assert store.startable_runs([fast, other]) == {fast: fast_token, other: other_token}
    for batch in batches.values():
        store.update_group(Batch, batch.id, {"status": enums.BatchStatus.FAILED})
    assert store.startable_runs([fast, other]) == {other: other_token}, "only fail-fast stops"


def test_complete_runs_completes_the_runs_still_theirs(store):
    name = unique_queue("complete")
    token, (a, b) = _runs(store, name, 2)
    insert(store, job(name, depends_on=[str(b)], dependency_status=enums.DependencyStatus.WAITING))
    other_token, (c,) = _runs(store, unique_queue("complete_other"), 1)
    done = T0 + timedelta(seconds=3)
    runs = [(a, token, None), (b, token, None), (c, token, None)]
    assert store.atomic(lambda: store.complete_runs(runs, done)) == {a: False, b: True}
    completed = one(store, a)
    assert (completed.status, completed.completed_at, completed.result) == ("Completed", done, None)
    assert (completed.run_token, completed.lease_expires_at) == (None, None)
    assert one(store, c).status == JobStatus.RUNNING, "another claim's run was completed"
    assert store.atomic(lambda: store.complete_runs([(a, token, None)], done)) == {}


def test_complete_runs_completes_the_runs_of_many_claims_each_fenced_by_its_own_token(store):
    """One statement for a write's completions of every claim: each row is written only if
    it is still the run of the token it is listed with."""
    name = unique_queue("complete_claims")
    first, (a, b) = _runs(store, name, 2)
    second, (c, d) = _runs(store, name, 2)
    runs = [(a, first, {"n": 1}), (c, second, {"n": 3}), (b, second, 2), (d, first, 4)]
    assert store.atomic(lambda: store.complete_runs(runs, T0)) == {a: False, c: False}
    assert [one(store, i).status for i in (a, b, c, d)] == [
        JobStatus.COMPLETED,
        JobStatus.RUNNING,
        JobStatus.COMPLETED,
        JobStatus.RUNNING,
    ], "a run listed with another claim's token was written"
    assert (one(store, a).result, one(store, c).result) == ({"n": 1}, {"n": 3})
    assert one(store, b).run_token == first and one(store, d).run_token == second


def test_complete_runs_writes_each_runs_own_result(store):
    name = unique_queue("complete_results")
    results = [
        {"ok": True, "n": 1},
        None,
        False,
        0,
        "",
        [],
        'quote " and \u00e9 \U0001f600',
        [1, {"a": None}],
    ]
    token, ids = _runs(store, name, len(results))
    stale = uuid.uuid4()
    runs = [*zip(ids, [token] * len(ids), results, strict=True), (stale, token, 1)]
    written = store.atomic(lambda: store.complete_runs(runs, T0))
    assert written == dict.fromkeys(ids, False)
    stored = [one(store, i) for i in ids]
    assert [j.result for j in stored] == results
    assert [type(j.result) for j in stored] == [type(r) for r in results], "False is not 0"
    assert all(j.status == JobStatus.COMPLETED and j.completed_at == T0 for j in stored)
    # A job listed twice is written once, with one of its results.
    token, (a,) = _runs(store, unique_queue("complete_twice"), 1)
    twice = [(a, token, {"n": 2})] * 2
    assert store.atomic(lambda: store.complete_runs(twice, T0)) == {a: False}
    assert one(store, a).result == {"n": 2}


def test_complete_free_runs_writes_every_claims_completions_in_one_statement(store):
    """The worker's usual write: the plain completions of several claims at once, each row
    fenced by its own run's token; a stale run and a job with dependents are left alone (the
    caller writes the latter in a transaction, with the release of its dependents)."""
    name = unique_queue("complete_free")
    token, (a, b) = _runs(store, name, 2)
    other_token, (c, d) = _runs(store, unique_queue("complete_free_other"), 2)
    insert(store, job(name, depends_on=[str(d)], dependency_status=enums.DependencyStatus.WAITING))
    done = T0 + timedelta(seconds=3)
    runs = [(a, token, {"n": 1}), (b, other_token, 2), (c, other_token, None), (d, other_token, 4)]
    written, startable = store.complete_free_runs(runs, done)
    assert startable == {}
    if written is None:  # MariaDB: its UPDATE cannot say which rows it wrote
        assert store.vendor == "mysql"
        assert {one(store, i).status for i in (a, b, c, d)} == {JobStatus.RUNNING}
        return
    assert written == {a, c}
    assert (one(store, a).status, one(store, a).result, one(store, a).completed_at) == (
        JobStatus.COMPLETED, {"n": 1}, done,
    )  # fmt: skip
    assert (one(store, a).run_token, one(store, c).result) == (None, None)
    assert one(store, b).status == JobStatus.RUNNING, "another claim's token: a stale run"
    assert one(store, d).status == JobStatus.RUNNING, "it has a dependent to release"
    assert store.complete_free_runs([(a, token, 1)], done) == (set(), {}), "already completed"
    assert store.complete_free_runs([], done) == (set(), {})


def test_complete_free_runs_checks_the_held_jobs_after_its_write(store):
    """The start checks ride the same write: which held jobs may start (Running, queue not
    paused), with their tokens."""
    name = unique_queue("free_check")
    token, (a, b, c) = _runs(store, name, 3)
    other_token, (d,) = _runs(store, unique_queue("free_check_paused"), 1)
    store.pause(QueuePause(queue_name=one(store, d).queue_name, paused_at=T0))
    nobody = uuid.uuid4()
    written, startable = store.complete_free_runs([(a, token, None)], T0, [b, c, d, nobody])
    assert written in ({a}, None)
    assert startable == {b: token, c: token}, "d's queue is paused; nobody has no run"
    store.atomic(lambda: store.complete_runs([(c, token, None)], T0))
    assert store.complete_free_runs([], T0, [b, c])[1] == {b: token}, "c's run ended"


def test_update_runs_is_the_fenced_write(store):
    name = unique_queue("update_runs")
    token, (a, b) = _runs(store, name, 2)
    fields = {"lease_expires_at": T0 + LEASE * 2, "last_heartbeat_at": T0 + LEASE}
    assert store.update_runs([a, a, b], token, fields) == 2, "a run listed twice counts once"
    assert one(store, b).lease_expires_at == T0 + LEASE * 2
    assert store.update_runs([a], uuid.uuid4(), {"error_message": "stale"}) == 0
    store.complete_runs([(a, token, None)], T0)
    assert store.update_runs([a], token, {"error_message": "late"}) == 0
    assert one(store, a).error_message is None


def test_release_runs_hands_runs_back(store):
    name = unique_queue("release")
    token, (a,) = _runs(store, name, 1)
    assert store.release_runs([a], uuid.uuid4()) == 0
    assert store.release_runs([a], token) == 1
    released = one(store, a)
    assert (released.status, released.attempts, released.run_token) == ("Pending", 0, None)
    assert (released.started_at, released.last_heartbeat_at, released.lease_expires_at) == (
        None,
        None,
        None,
    )
    assert store.release_runs([a], token) == 0


def test_expired_leases_are_locked_earliest_first(store):
    name = unique_queue("expired")
    token, ids = _runs(store, name, 3)
    for i, job_id in enumerate(ids):
        store.update_runs([job_id], token, {"lease_expires_at": T0 + timedelta(seconds=10 * i)})
    other_token, (other,) = _runs(store, unique_queue("expired_other"), 1)
    store.update_runs([other], other_token, {"lease_expires_at": T0 + timedelta(seconds=15)})
    now = T0 + timedelta(seconds=20)  # the third lease expires at now: not yet expired

    def lock(queue=name, limit=10):
        return store.atomic(lambda: store.lock_expired_leases(now, queue, limit))

    assert lock() == [(ids[0], token), (ids[1], token)]
    assert lock(limit=1) == [(ids[0], token)]
    assert lock(queue=None) == [(ids[0], token), (ids[1], token), (other, other_token)]
