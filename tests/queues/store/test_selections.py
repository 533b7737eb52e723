"""Stores: selections (a rule as a queryset and as a test of one row) read a page at a time,
counted and deleted in bounded batches; the finished groups a purge deletes whole; a group's
row deleted with the jobs still in it."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest

from queues.api import JobStatus
from queues.enums import AttemptEnd, BatchStatus, WorkflowStatus
from queues.models import Batch, FailedAttempt, Job, Workflow
from queues.store import Match
from tests.queues.conftest import unique_queue
from tests.queues.store.conftest import T0, insert, job, one


class Dead:
    """A test selection: the Dead jobs of one queue."""

    def __init__(self, queue: str) -> None:
        self.queue = queue

    def rows(self, using: str):
        return Job.objects.using(using).filter(queue_name=self.queue, status=JobStatus.DEAD)

    def matches(self, job: Job) -> bool:
        return job.queue_name == self.queue and job.status == JobStatus.DEAD


def dead(queue: str, **fields) -> Job:
    return job(queue, status=JobStatus.DEAD, failed_at=T0, **fields)


def failure(job_id, when=T0) -> FailedAttempt:
    return FailedAttempt(
        job_id=job_id, attempt=1, failed_at=when, ended_by=AttemptEnd.ERROR, status="Dead"
    )


def test_a_selection_is_read_in_pages_of_the_stores_id_order(store):
    name = unique_queue("select")
    chosen = insert(store, *(dead(name) for _ in range(5)))
    others = insert(store, job(name), dead(unique_queue("select_other")))
    selection = Dead(name)

    every = store.select_ids(selection)
    assert sorted(every) == sorted(chosen) and store.count_selected(selection) == 5
    pages, last = [], None
    while page := store.select_ids(selection, after=last, limit=2):
        pages.append(page)
        last = str(page[-1])  # a bulk operation's cursor is text
    assert [len(page) for page in pages] == [2, 2, 1]
    assert [i for page in pages for i in page] == every  # in order, each once

    among = [chosen[3], chosen[0], uuid.uuid4(), *others]
    assert sorted(store.select_ids(selection, among=among)) == sorted([chosen[0], chosen[3]])
    assert store.select_ids(selection, among=[]) == []
    assert store.count_selected(Dead(unique_queue("select_none"))) == 0


def test_deleting_a_selection_takes_a_bounded_batch_with_edges_and_history(store):
    name = unique_queue("select_delete")
    doomed = [dead(name) for _ in range(3)]
    child = job(name).depends_on_job(doomed[0])
    live = job(name)
    insert(store, *doomed, child, live)
    store.insert_attempts([failure(doomed[0].id), failure(live.id)])
    selection = Dead(name)

    assert store.atomic(lambda: store.delete_selected(selection, 2)) == 2
    assert store.delete_selected(selection, 2) == 1
    assert store.delete_selected(selection, 2) == 0
    assert all(one(store, j.id) is None for j in doomed)
    assert store.find_attempts(doomed[0].id) == []
    assert store.dependents([doomed[0].id]) == set() and store.blocked([child.id]) == set()
    # Nothing else changes: the dependent is not released (the pruner's old jobs).
    assert one(store, child.id).dependency_status == child.dependency_status
    assert len(store.find_attempts(live.id)) == 1 and one(store, live.id) is not None


def test_a_deleted_selection_comes_back_if_its_transaction_is_undone(store):
    name = unique_queue("select_undo")
    ids = insert(store, dead(name), dead(name))

    def delete_then_fail():
        store.delete_selected(Dead(name), 10)
        raise RuntimeError("undo")

    with pytest.raises(RuntimeError):
        store.atomic(delete_then_fail)
    assert sorted(store.select_ids(Dead(name))) == sorted(ids)


def group_with_jobs(store, group, *statuses) -> list:
    store.insert_group(group)
    column = "batch_id" if isinstance(group, Batch) else "workflow_id"
    name = unique_queue("finished_group")
    # A Completed job has its time (a check of the table); no job here is Running.
    return insert(store, *(
        job(name, status=s, completed_at=T0 if s == JobStatus.COMPLETED else None,
            **{column: group.id})
        for s in statuses
    ))  # fmt: skip


def test_finished_groups_are_those_that_finished_before_the_time_with_every_job(store):
    cutoff = T0 - timedelta(days=7)
    old, recent = cutoff - timedelta(hours=1), cutoff + timedelta(hours=1)
    done = JobStatus.COMPLETED

    def batch(status, completed_at=None) -> Batch:
        return Batch(name="b", status=status, completed_at=completed_at, created_at=old)

    def workflow(status, created_at=old, **ends) -> Workflow:
        return Workflow(name="w", status=status, created_at=created_at, **ends)

    expected = {
        batch(BatchStatus.COMPLETED, old): [done, JobStatus.DEAD],
        batch(BatchStatus.PARTIALLY_FAILED, old): [],
        workflow(WorkflowStatus.FAILED, failed_at=old, created_at=old): [JobStatus.FAILED],
        workflow(WorkflowStatus.CANCELLED): [JobStatus.ARCHIVED],  # ended: its creation
    }
    not_expected = {
        batch(BatchStatus.COMPLETED, old): [done, JobStatus.PENDING],  # a job not finished
        batch(BatchStatus.FAILED, recent): [JobStatus.FAILED],
        batch(BatchStatus.PROCESSING): [done],
        workflow(WorkflowStatus.COMPLETED, completed_at=recent): [done],
        workflow(WorkflowStatus.RUNNING): [JobStatus.RETRYING],
    }
    for group, statuses in {**expected, **not_expected}.items():
        group_with_jobs(store, group, *statuses)
    mine = {group.id for group in [*expected, *not_expected]}

    found = [g for g in store.finished_groups(cutoff) if g.id in mine]
    assert {g.id for g in found} == {group.id for group in expected}
    assert {type(g) for g in found} == {Batch, Workflow}
    found[0].name = "changed after the read"
    assert all(g.name in ("b", "w") for g in store.finished_groups(cutoff) if g.id in mine)


@pytest.mark.parametrize("model", [Batch, Workflow])
def test_a_group_is_deleted_with_the_jobs_still_in_it(store, model):
    group = model(name="g", created_at=T0)
    ids = group_with_jobs(store, group, JobStatus.COMPLETED, JobStatus.DEAD)
    store.insert_attempts([failure(ids[1])])
    other = model(name="other", created_at=T0)
    kept = group_with_jobs(store, other, JobStatus.COMPLETED)

    def delete_then_fail():
        store.delete_group(model, group.id)
        raise RuntimeError("undo")

    with pytest.raises(RuntimeError):
        store.atomic(delete_then_fail)
    assert store.get_group(model, group.id) is not None and one(store, ids[0]) is not None

    store.atomic(lambda: store.delete_group(model, group.id))
    assert store.get_group(model, group.id) is None
    column = "batch_id" if model is Batch else "workflow_id"
    assert store.find_jobs(Match(**{column: group.id})) == []
    assert store.find_attempts(ids[1]) == []
    assert store.get_group(model, other.id) is not None and one(store, kept[0]) is not None
    store.delete_group(model, uuid.uuid4())  # no such row: nothing
