"""The conformance suite of the stores (after River's driver suite): each contract of the
`Store` protocol (`queues/engine/base.py`), exercised with store operations only, on the SQL
store of this run's database and on the memory store. `JobQueue` is written once over these
operations, so a store that passes here gives `TestQueue` the database's behaviour."""

from __future__ import annotations

import threading
import time
import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest
from django.db import IntegrityError, connection

from queues import enums
from queues.api import JobPriority, JobStatus
from queues.engine import ClaimParams, Match, sql_store
from queues.memory.store import MemoryStore
from queues.models import Batch, Job, QueuePause, ReaperRun, Workflow

from .conftest import unique_queue

T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
LEASE = timedelta(seconds=30)


@pytest.fixture(params=["sql", "memory"])
def store(request):
    # The sql variant has a transactional database (see conftest).
    if request.param == "memory":
        yield MemoryStore()
        return
    yield sql_store("default")
    connection.close()


def job(queue: str, age: int = 0, **fields) -> Job:
    """A new job as the queue hands it to the store: Pending, due `age` seconds before T0."""
    fields.setdefault("created_at", T0)
    fields.setdefault("scheduled_at", T0 - timedelta(seconds=age))
    return Job(queue_name=queue, **fields)


def insert(store, *jobs: Job) -> list:
    store.insert_jobs(list(jobs))
    return [j.id for j in jobs]


def claim(store, queue: str, limit: int = 10, token=None, now=T0, priority=None) -> list[Job]:
    params = ClaimParams(
        queue=queue,
        limit=limit,
        now=now,
        lease_expires_at=now + LEASE,
        token=token or uuid.uuid4(),
        priority=priority,
    )
    return store.atomic(lambda: store.claim(params))


def one(store, job_id) -> Job | None:
    found = store.find_jobs(Match(ids=[job_id]))
    return found[0] if found else None


class Boom(Exception):
    pass


# Transactions ------------------------------------------------------------------------------
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


# Claims ------------------------------------------------------------------------------------
def _ineligible(store, name: str) -> list:
    """Jobs of `name` that no claim may take."""
    parent = job(name, age=100, priority=JobPriority.HIGH)
    insert(store, parent)
    return insert(
        store,
        job(name, age=-60, priority=JobPriority.CRITICAL),  # due later
        job(
            name,
            priority=JobPriority.CRITICAL,
            depends_on=[str(parent.id)],
            dependency_status=enums.DependencyStatus.WAITING,
        ),
        job(name, priority=JobPriority.CRITICAL, dependency_status=enums.DependencyStatus.FAILED),
        job(name, priority=JobPriority.CRITICAL, cron_schedule="* * * * *", recurring=False),
        job(name, priority=JobPriority.CRITICAL, status=JobStatus.DEAD, failed_at=T0),
        job(unique_queue("other"), priority=JobPriority.CRITICAL),
    ) + [parent.id]


def test_claimable_levels_are_those_with_a_claimable_job(store):
    name = unique_queue("levels")
    _ineligible(store, name)
    satisfied = enums.DependencyStatus.SATISFIED
    insert(store, job(name, priority=JobPriority.LOW, dependency_status=satisfied))
    insert(store, job(name, priority=JobPriority.LOW, cron_schedule="* * * * *", recurring=True))
    assert sorted(store.claimable_levels(name, T0)) == [JobPriority.LOW, JobPriority.HIGH]
    store.pause(QueuePause(queue_name=name, paused_at=T0))
    assert sorted(store.claimable_levels(name, T0)) == [JobPriority.LOW, JobPriority.HIGH]


def test_a_claim_takes_claimable_jobs_in_claim_order_and_marks_them(store):
    name = unique_queue("claim")
    parent_id = _ineligible(store, name)[-1]  # the HIGH parent, due 100 s ago
    low_old = job(name, age=50, priority=JobPriority.LOW)
    normal_new, normal_old = job(name, age=10), job(name, age=20)
    insert(store, low_old, normal_new, normal_old)
    token = uuid.uuid4()
    claimed = claim(store, name, limit=3, token=token)
    assert sorted(j.id for j in claimed) == sorted([parent_id, normal_old.id, normal_new.id])
    for claimed_job in [*claimed, *(one(store, j.id) for j in claimed)]:
        assert claimed_job.status == JobStatus.RUNNING and claimed_job.attempts == 1
        assert (claimed_job.started_at, claimed_job.last_heartbeat_at) == (T0, T0)
        assert (claimed_job.lease_expires_at, claimed_job.run_token) == (T0 + LEASE, token)
    assert [j.id for j in claim(store, name)] == [low_old.id]
    assert claim(store, name) == []


def test_a_claim_at_a_level_takes_only_that_level(store):
    name = unique_queue("claim_level")
    low, high = job(name, priority=JobPriority.LOW), job(name, priority=JobPriority.HIGH)
    insert(store, low, high)
    assert [j.id for j in claim(store, name, priority=JobPriority.LOW)] == [low.id]
    assert claim(store, name, priority=JobPriority.LOW) == []


def test_a_paused_queue_is_never_claimed_from(store):
    name = unique_queue("claim_paused")
    job_id = insert(store, job(name))[0]
    store.pause(QueuePause(queue_name=name, paused_at=T0))
    assert claim(store, name) == [] and claim(store, name, priority=JobPriority.NORMAL) == []
    store.resume(name)
    assert [j.id for j in claim(store, name)] == [job_id]


# Runs --------------------------------------------------------------------------------------
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


def test_complete_runs_completes_the_runs_still_theirs(store):
    name = unique_queue("complete")
    token, (a, b) = _runs(store, name, 2)
    insert(store, job(name, depends_on=[str(b)], dependency_status=enums.DependencyStatus.WAITING))
    other_token, (c,) = _runs(store, unique_queue("complete_other"), 1)
    done = T0 + timedelta(seconds=3)
    assert store.atomic(lambda: store.complete_runs([a, b, c], token, done)) == {a: False, b: True}
    completed = one(store, a)
    assert (completed.status, completed.completed_at, completed.result) == ("Completed", done, None)
    assert (completed.run_token, completed.lease_expires_at) == (None, None)
    assert one(store, c).status == JobStatus.RUNNING, "another claim's run was completed"
    assert store.atomic(lambda: store.complete_runs([a], token, done)) == {}


def test_update_runs_is_the_fenced_write(store):
    name = unique_queue("update_runs")
    token, (a, b) = _runs(store, name, 2)
    fields = {"lease_expires_at": T0 + LEASE * 2, "last_heartbeat_at": T0 + LEASE}
    assert store.update_runs([a, a, b], token, fields) == 2, "a run listed twice counts once"
    assert one(store, b).lease_expires_at == T0 + LEASE * 2
    assert store.update_runs([a], uuid.uuid4(), {"error_message": "stale"}) == 0
    store.complete_runs([a], token, T0)
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


# Jobs --------------------------------------------------------------------------------------
def test_jobs_are_stored_as_a_database_stores_them_and_handed_out_as_copies(store):
    name = unique_queue("copies")
    paris = timezone(timedelta(hours=1))
    given = job(name, payload={"pair": (1, 2), 3: "three"}, scheduled_at=T0.astimezone(paris))
    insert(store, given)
    given.payload["pair"] = "changed after the insert"
    stored = one(store, given.id)
    assert stored.payload == {"pair": [1, 2], "3": "three"}
    assert stored.scheduled_at == T0 and stored.scheduled_at.utcoffset() == timedelta(0)
    stored.payload["pair"].append(3)
    stored.status = JobStatus.DEAD
    assert one(store, given.id).payload == {"pair": [1, 2], "3": "three"}
    assert one(store, given.id).status == JobStatus.PENDING


def test_find_jobs_matches_every_field_given_in_claim_order(store):
    name = unique_queue("find")
    batch = Batch(id=uuid.uuid4(), name="b", created_at=T0)
    workflow = Workflow(id=uuid.uuid4(), name="w", created_at=T0)
    store.insert_group(batch)
    store.insert_group(workflow)
    old, new = job(name, age=20, batch_id=batch.id), job(name, age=10, batch_id=batch.id)
    high = job(name, priority=JobPriority.HIGH, workflow_id=workflow.id)
    dead = job(name, status=JobStatus.DEAD, failed_at=T0, dependency_status="failed")
    insert(store, old, new, high, dead, job(unique_queue("find_other")))
    token = uuid.uuid4()
    claim(store, name, limit=1, token=token)  # the high job

    def ids(**match) -> list:
        return [j.id for j in store.find_jobs(Match(**match))]

    assert ids(queue_name=name) == [high.id, old.id, new.id, dead.id]
    assert ids(queue_name=name, status=JobStatus.PENDING) == [old.id, new.id]
    assert ids(queue_name=name, status=[JobStatus.DEAD, JobStatus.RUNNING]) == [high.id, dead.id]
    assert ids(ids=[new.id, dead.id, uuid.uuid4()]) == [new.id, dead.id]
    assert ids(run_token=token) == [high.id]
    assert ids(batch_id=batch.id) == [old.id, new.id]
    assert ids(workflow_id=workflow.id) == [high.id]
    assert ids(queue_name=name, dependency_status="failed") == [dead.id]
    assert ids(ids=[]) == []
    assert [j.id for j in store.find_jobs(Match(queue_name=name), limit=2)] == [high.id, old.id]


def test_lock_update_and_delete_reach_the_matching_jobs(store):
    name = unique_queue("update")
    a, b, c = job(name), job(name), job(name, status=JobStatus.DEAD, failed_at=T0)
    insert(store, a, b, c)
    pending = Match(queue_name=name, status=JobStatus.PENDING)
    locked = store.atomic(lambda: store.lock_jobs(pending))
    assert sorted(j.id for j in locked) == sorted([a.id, b.id])
    assert store.update_jobs(pending, {"error_message": "seen"}) == 2
    assert one(store, c.id).error_message is None and one(store, a.id).error_message == "seen"
    assert store.atomic(lambda: store.delete_jobs(Match(ids=[a.id, c.id]))) == 2
    assert [j.id for j in store.find_jobs(Match(queue_name=name))] == [b.id]


def test_job_counts_cover_every_status(store):
    name = unique_queue("counts")
    insert(store, job(name), job(name), job(name, status=JobStatus.DEAD, failed_at=T0))
    claim(store, name, limit=1)
    expected = dict.fromkeys(JobStatus.values, 0) | {"Pending": 1, "Running": 1, "Dead": 1}
    assert store.count_jobs(name) == expected
    assert store.count_jobs(unique_queue("counts_none")) == dict.fromkeys(JobStatus.values, 0)


# Dependencies ------------------------------------------------------------------------------
def _family(store, name: str) -> tuple[Job, Job, Job]:
    """Two parents and the child that waits for both."""
    a, b = job(name), job(name)
    insert(store, a, b)
    child = job(name, depends_on=[str(a.id), str(b.id)], dependency_status="waiting")
    insert(store, child)
    return a, b, child


def _complete_all(store, name: str) -> None:
    token = uuid.uuid4()
    claimed = claim(store, name, token=token)
    store.atomic(lambda: store.complete_runs([j.id for j in claimed], token, T0))


def test_dependents_and_blocked_follow_the_edges(store):
    name = unique_queue("edges")
    a, b, child = _family(store, name)
    assert store.dependents([a.id]) == store.dependents([a.id, b.id]) == {child.id}
    assert store.dependents([child.id]) == set()
    assert store.blocked([child.id, a.id]) == {child.id}
    _complete_all(store, name)
    assert store.blocked([child.id]) == set()


def test_deleting_a_job_deletes_its_edges_both_ways(store):
    name = unique_queue("delete_edges")
    parent, other, child = _family(store, name)
    store.atomic(lambda: store.delete_jobs(Match(ids=[parent.id])))
    assert store.dependents([parent.id]) == set() and store.dependents([other.id]) == {child.id}
    _complete_all(store, name)  # the other parent
    assert store.blocked([child.id]) == set(), "the deleted parent still blocks"
    store.atomic(lambda: store.delete_jobs(Match(ids=[child.id])))
    assert store.dependents([other.id]) == set()


# Batches and workflows ---------------------------------------------------------------------
def test_groups_are_inserted_read_locked_and_updated(store):
    batch = Batch(id=uuid.uuid4(), name="b", metadata={"k": "v"}, created_at=T0)
    workflow = Workflow(
        id=uuid.uuid4(), name="w", failure_policy=enums.FailurePolicy.MANUAL, created_at=T0
    )
    store.insert_group(batch)
    store.insert_group(workflow)
    batch.name = "changed after the insert"
    assert store.get_group(Batch, batch.id).name == "b"
    assert store.get_group(Workflow, workflow.id).failure_policy == enums.FailurePolicy.MANUAL
    assert store.get_group(Batch, workflow.id) is None
    assert store.get_group(Workflow, batch.id) is None
    fields = {"total_jobs": 3, "completed_jobs": 1, "status": enums.BatchStatus.PROCESSING}
    store.atomic(lambda: store.update_group(Batch, store.lock_group(Batch, batch.id).id, fields))
    stored = store.get_group(Batch, batch.id)
    assert (stored.total_jobs, stored.completed_jobs, stored.status) == (3, 1, "Processing")
    assert stored.metadata == {"k": "v"}
    assert store.atomic(lambda: store.lock_group(Workflow, uuid.uuid4())) is None


def test_first_failure_is_the_first_own_failure_in_claim_order(store):
    name = unique_queue("first_failure")
    batch = Batch(id=uuid.uuid4(), name="b", created_at=T0)
    store.insert_group(batch)

    def failed(age, error, status=JobStatus.DEAD):
        fields = {"status": status, "error_message": error, "failed_at": T0}
        return job(name, age=age, batch_id=batch.id, **fields)

    cascaded = failed(30, "Batch failed: job x failed (fail-fast mode)", JobStatus.FAILED)
    first, second = failed(20, "boom"), failed(10, None, JobStatus.TIMED_OUT)
    insert(store, cascaded, second, first, job(name, age=40, batch_id=batch.id))
    assert store.first_failure(batch.id, "Batch failed") == first.id
    assert store.first_failure(batch.id, "boom") == cascaded.id
    assert store.first_failure(uuid.uuid4(), "Batch failed") is None


# Pauses and reaper runs --------------------------------------------------------------------
def test_pauses(store):
    name = unique_queue("pause")
    assert not store.is_paused(name)
    store.resume(name)  # nothing to take away
    store.pause(QueuePause(queue_name=name, paused_at=T0, paused_by="a"))
    store.pause(QueuePause(queue_name=name, paused_at=T0, paused_by="b", reason="again"))
    assert store.is_paused(name) and not store.is_paused(unique_queue("pause_other"))
    store.resume(name)
    assert not store.is_paused(name)


def test_reaper_runs_are_recorded_with_an_id(store):
    ids = [uuid.uuid4()]
    rows = [ReaperRun(ran_at=T0, ran_by=f"r{n}", requeued_ids=[str(ids[0])]) for n in (1, 2)]
    for row in rows:
        store.insert_reaper_run(row)
    assert rows[0].id is not None and rows[1].id > rows[0].id
    rows[0].requeued_ids.append("changed after the insert")
    stored = (
        store.reaper_runs()
        if isinstance(store, MemoryStore)
        else list(ReaperRun.objects.order_by("id"))
    )
    assert [(r.id, r.ran_by, r.requeued_ids) for r in stored] == [
        (rows[0].id, "r1", [str(ids[0])]),
        (rows[1].id, "r2", [str(ids[0])]),
    ]
