"""`JobQueue.retry_jobs`, `cancel_jobs` and `mark_jobs_dead` (and TestQueue's): many jobs in
one transaction, ending exactly as the single methods called one by one would, in a number
of statements that does not grow with the plain jobs of a page."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from queues.api import Job, JobOutcome, JobStatus
from queues.enums import AttemptEnd
from queues.exceptions import InvalidJob
from queues.models import FailedAttempt
from queues.models import Job as JobRow
from queues.ops import acting
from queues.options import DequeueOptions
from tests.queues.conftest import unique_queue
from tests.queues.support.bulk_mix import compare


# The same as one by one ---------------------------------------------------------------------
def test_retry_jobs_ends_as_retry_job_one_by_one(queue):
    state, result, mix = compare(queue, "retry_job", "retry_jobs")
    refused = {mix.labels[job_id] for job_id in result.refused}
    assert refused == {"completed", "unique_taken"}
    assert "holds the unique key" in result.reasons[mix.ids["unique_taken"]]
    assert len(result.done) == len(mix.ids) - 2 and result.missing == 0
    jobs = state["jobs"]
    assert jobs["dead"][:2] == (JobStatus.PENDING, 0)
    assert jobs["running", "history"][-1][1] == AttemptEnd.RETRIED
    assert jobs["running"][0] == JobStatus.PENDING, "the late outcome of the fenced run"


def test_cancel_jobs_ends_as_cancel_job_one_by_one(queue):
    state, result, mix = compare(queue, "cancel_job", "cancel_jobs", reason="stop it")
    refused = {mix.labels[job_id] for job_id in result.refused}
    # Failed, Dead, Completed (the child of a Dead job failed at its enqueue); the
    # workflow's child failed by its parent's cancel first.
    finished = {"failed", "dead", "completed", "unique_taken", "child_of_dead"}
    assert refused == finished | {"wf_child"}
    jobs = state["jobs"]
    assert jobs["pending"][0] == jobs["running"][0] == JobStatus.FAILED
    assert jobs["wf_child"][3] == "Dependency failed: job wf_parent failed"
    assert jobs["recurring"][-1] is False
    assert state["batch"][3] == 2, "the fail-fast batch failed its other job"


def test_mark_jobs_dead_ends_as_mark_job_dead_one_by_one(queue):
    _, result, mix = compare(queue, "mark_job_dead", "mark_jobs_dead")
    assert mix.labels[result.done[0]] in {"pending", "scheduled", "running", "in_batch"}


def test_the_condition_is_asked_of_the_locked_rows(queue):
    name = unique_queue("opb_where")
    ids = queue.enqueue_many([Job(queue_name=name) for _ in range(4)])
    keep = set(ids[:2])
    result = queue.cancel_jobs(ids, where=lambda job: job.id not in keep)
    assert sorted(result.kept, key=str) == sorted(keep, key=str)
    assert {queue.get_job(i).status for i in keep} == {JobStatus.PENDING}
    assert sorted(result.done, key=str) == sorted(set(ids) - keep, key=str)


# Bad input -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("call", "args"),
    [
        ("retry_jobs", {"at": datetime(2030, 1, 1)}),  # naive
        ("retry_jobs", {"at": "tomorrow"}),
        ("retry_jobs", {"junk": True}),
        ("cancel_jobs", {"junk": True}),
        ("mark_jobs_dead", {"junk": True}),
    ],
)
def test_bad_input_is_a_typed_error_and_changes_nothing(queue, call, args):
    name = unique_queue("opb_bad")
    ids = queue.enqueue_many([Job(queue_name=name) for _ in range(3)])
    queue.mark_job_dead(ids[0])
    args = dict(args)
    given = [*ids, "not-a-job-id"] if args.pop("junk", False) else ids
    before = [(j.status, j.scheduled_at, j.error_message) for j in map(queue.get_job, ids)]
    with pytest.raises(InvalidJob):
        getattr(queue, call)(given, **args)
    after = [(j.status, j.scheduled_at, j.error_message) for j in map(queue.get_job, ids)]
    assert after == before


def test_no_ids_no_statements(db_queue):
    with CaptureQueriesContext(connection) as seen:
        result = db_queue.retry_jobs([])
    assert result.done == [] and result.missing == 0
    assert [q for q in seen.captured_queries if "queues_" in q["sql"]] == []


# A constant number of statements a page -------------------------------------------------------
def _statements(queue, count: int, action) -> int:
    name = unique_queue("opb_cost")
    ids = queue.enqueue_many([Job(queue_name=name) for _ in range(count)])
    runs = queue.dequeue(name, DequeueOptions(batch_size=count // 2))
    if action == "retry":  # Dead and Running ones
        queue.finish_job_runs([(run, JobOutcome.dead("no")) for run in runs[: count // 4]])
    with CaptureQueriesContext(connection) as seen:
        if action == "retry":
            result = queue.retry_jobs(ids)
        else:
            result = queue.cancel_jobs(ids, reason="enough")
    assert len(result.done) == count
    return len(seen.captured_queries)


@pytest.mark.parametrize("action", ["retry", "cancel"])
def test_the_statements_of_a_page_do_not_grow_with_its_plain_jobs(db_queue, action):
    assert _statements(db_queue, 20, action) == _statements(db_queue, 200, action)


def test_a_bulk_operation_page_is_a_constant_number_of_statements(db_queue):
    def page(count: int) -> int:
        name = unique_queue("opb_page")
        ids = db_queue.enqueue_many([Job(queue_name=name) for _ in range(count)])
        db_queue.finish_job_runs(
            [(run, JobOutcome.dead("no")) for run in db_queue.dequeue(name, DequeueOptions(count))]
        )
        with CaptureQueriesContext(connection) as seen:
            tally = acting.act_on_page(db_queue, "retry", ids)
        assert tally["done"] == count
        return len(seen.captured_queries)

    assert page(20) == page(200)


# A worker claiming while a bulk retry runs ----------------------------------------------------
def test_a_worker_claiming_during_bulk_retries_loses_nothing_and_runs_nothing_twice(db_queue):
    name = unique_queue("opb_race")
    ids = db_queue.enqueue_many([Job(queue_name=name, payload={"n": n}) for n in range(40)])
    finished: list[tuple] = []  # (job id, run token, recorded)
    retrying = threading.Event()
    errors: list[BaseException] = []

    def handler(job) -> dict:  # a user's handler: reads the ORM, returns a value
        return {"n": job.payload["n"], "seen": JobRow.objects.filter(queue_name=name).count()}

    def worker() -> None:
        try:
            for _ in range(2000):
                runs = db_queue.dequeue(name, DequeueOptions(batch_size=4))
                for run in runs:
                    recorded = db_queue.finish_job_run(run, JobOutcome.completed(handler(run)))
                    finished.append((run.id, run.run_token, recorded is not None))
                counts = db_queue.get_job_counts_by_status(name)
                if not retrying.is_set() and counts[JobStatus.COMPLETED] == len(ids):
                    return
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    retrying.set()
    thread = threading.Thread(target=worker)
    thread.start()
    try:
        for _ in range(15):
            db_queue.retry_jobs(ids)
    finally:
        retrying.clear()
    thread.join(300)
    assert not thread.is_alive() and not errors, errors

    assert {db_queue.get_job(i).status for i in ids} == {JobStatus.COMPLETED}, "none lost"
    recorded = [job_id for job_id, _, kept in finished if kept]
    assert sorted(recorded, key=str) == sorted(ids, key=str), "each job completed once"
    fenced = {(job_id, token) for job_id, token, kept in finished if not kept}
    rows = FailedAttempt.objects.filter(job__queue_name=name, ended_by=AttemptEnd.RETRIED)
    assert {(row.job_id, row.run_token) for row in rows} == fenced, "fenced runs discarded"


def test_at_schedules_every_retried_job(queue):
    name = unique_queue("opb_at")
    ids = queue.enqueue_many([Job(queue_name=name) for _ in range(3)])
    at = queue.now() + timedelta(hours=2)
    queue.retry_jobs(ids, at=at)
    assert {queue.get_job(i).scheduled_at for i in ids} == {at}
