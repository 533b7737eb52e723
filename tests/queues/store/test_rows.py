"""Stores: jobs, dependency edges, batches and workflows, pauses, reaper runs."""

from __future__ import annotations

import uuid
from datetime import timedelta, timezone

from queues import enums
from queues.api import JobPriority, JobStatus
from queues.models import Batch, Job, QueuePause, ReaperRun, Workflow
from queues.store import Match
from queues.store.memory.store import MemoryStore
from tests.queues.conftest import unique_queue
from tests.queues.store.conftest import T0, claim, insert, job, one


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
    store.atomic(lambda: store.complete_runs([(j.id, token, None) for j in claimed], T0))


def test_dependents_and_blocked_follow_the_edges(store):
    name = unique_queue("edges")
    a, b, child = _family(store, name)
    assert store.dependents([a.id]) == store.dependents([a.id, b.id]) == {child.id}
    assert store.dependents([child.id]) == set()
    # By parent, for a claim's completions: those without dependents are left out.
    assert store.dependents_of([a.id, b.id, child.id]) == {a.id: {child.id}, b.id: {child.id}}
    assert store.dependents_of([child.id]) == {}
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
    row = store.get_pause(name)
    assert (row.paused_at, row.paused_by, row.reason) == (T0, "b", "again")
    store.resume(name)
    assert not store.is_paused(name) and store.get_pause(name) is None


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
