"""Unique jobs on the database of the run and on TestQueue: a job whose key another job of
its queue holds is not inserted, and the enqueue answers the holder's id."""

from __future__ import annotations

from datetime import timedelta

import pytest

from queues.api import (
    BatchStatus,
    DequeueOptions,
    InvalidJob,
    InvalidJobTransition,
    Job,
    JobBatch,
    JobGroup,
    JobOutcome,
    JobStatus,
    WorkflowStatus,
    unique_key_for,
)
from queues.models import Workflow
from tests.queues.conftest import unique_queue


def keyed(name: str, key: str = "invoice:42", **fields) -> Job:
    fields.setdefault("payload", {"invoice": 42})
    return Job(queue_name=name, unique_key=key, **fields)


def rows(queue, name: str) -> int:
    return sum(queue.get_job_counts_by_status(name).values())


def run(queue, name: str, outcome: JobOutcome | None = None) -> Job:
    job = queue.dequeue_one(name)
    if outcome is not None:
        queue.finish_job_run(job, outcome)
    return job


# The live scope (the default) ----------------------------------------------------------------
def test_a_second_enqueue_while_the_first_is_pending_inserts_nothing(queue):
    name = unique_queue("unique_pending")
    first = queue.enqueue_unique(keyed(name))
    second = queue.enqueue_unique(keyed(name, payload={"another": "payload"}))
    assert first.created and not second.created
    assert second.id == first.id
    assert queue.enqueue(keyed(name)) == first.id, "enqueue answers the holder's id"
    assert rows(queue, name) == 1
    assert queue.get_job(first.id).payload == {"invoice": 42}, "the holder is left as it was"
    job_id, created = queue.enqueue_unique(keyed(name))  # it unpacks as a pair
    assert (job_id, created) == (first.id, False)


def test_a_running_job_holds_its_key_and_a_finished_one_frees_it(queue):
    name = unique_queue("unique_running")
    first = queue.enqueue(keyed(name))
    running = run(queue, name)
    assert queue.enqueue_unique(keyed(name)).id == first
    queue.finish_job_run(running, JobOutcome.completed())
    again = queue.enqueue_unique(keyed(name))
    assert again.created and again.id != first
    assert queue.get_job(first).unique_slot is None, "the finished holder gave up its slot"
    assert queue.get_job(again.id).unique_key == "invoice:42"
    assert rows(queue, name) == 2


@pytest.mark.parametrize("end", ["cancel", "dead", "delete"])
def test_a_cancelled_dead_or_deleted_job_frees_a_live_key(queue, end):
    name = unique_queue("unique_end")
    first = queue.enqueue(keyed(name))
    {"cancel": queue.cancel_job, "dead": queue.mark_job_dead, "delete": queue.delete_job}[end](
        first
    )
    assert queue.enqueue_unique(keyed(name)).created


def test_keys_are_per_queue(queue):
    emails, sms = unique_queue("unique_emails"), unique_queue("unique_sms")
    assert queue.enqueue_unique(keyed(emails, "user:7")).created
    assert queue.enqueue_unique(keyed(sms, "user:7")).created
    assert not queue.enqueue_unique(keyed(emails, "user:7")).created
    assert queue.enqueue_unique(keyed(emails, "User:7")).created, "keys are compared exactly"


def test_jobs_without_keys_are_never_duplicates(queue):
    name = unique_queue("unique_none")
    results = queue.enqueue_many_unique([Job(queue_name=name) for _ in range(3)])
    assert all(result.created for result in results)
    assert len({result.id for result in results}) == 3


# Periods and scopes ----------------------------------------------------------------------------
def test_a_period_keeps_the_key_taken_after_the_job_finished(queue):
    name = unique_queue("unique_period")
    hour = timedelta(hours=1)
    first = queue.enqueue(keyed(name, unique_period=hour))
    run(queue, name, JobOutcome.completed())
    queue.clock.advance(timedelta(minutes=59))
    assert queue.enqueue_unique(keyed(name, unique_period=hour)).id == first
    queue.clock.advance(timedelta(minutes=1))
    assert queue.enqueue_unique(keyed(name, unique_period=hour)).created


def test_a_live_job_holds_its_key_past_its_period(queue):
    # The scope and the period add up: a live duplicate is never let in.
    name = unique_queue("unique_live_past")
    first = queue.enqueue(keyed(name, unique_period=timedelta(seconds=10)))
    queue.clock.advance(timedelta(hours=2))
    assert queue.enqueue_unique(keyed(name)).id == first


def test_a_period_alone_with_no_statuses(queue):
    name = unique_queue("unique_period_only")
    first = queue.enqueue(keyed(name, unique_statuses=[], unique_period=timedelta(minutes=5)))
    queue.clock.advance(timedelta(minutes=5))
    again = queue.enqueue_unique(keyed(name))
    assert again.created, "past its period a job holds no key, even Pending"
    assert queue.get_job(first).status == JobStatus.PENDING


def test_the_holders_own_scope_decides(queue):
    name = unique_queue("unique_scope")
    # Held only until it starts: once Running, a new job of the key may wait behind it.
    first = queue.enqueue(keyed(name, unique_statuses=[JobStatus.PENDING]))
    assert queue.enqueue(keyed(name)) == first
    run(queue, name)
    second = queue.enqueue_unique(keyed(name))
    assert second.created
    assert queue.get_job(second.id).unique_statuses == ["Pending", "Running", "Retrying"]


def test_a_scope_of_failures_keeps_the_key_while_a_failed_job_stays(queue):
    name = unique_queue("unique_dead_scope")
    scope = [JobStatus.PENDING, JobStatus.RUNNING, JobStatus.DEAD]
    first = queue.enqueue(keyed(name, unique_statuses=scope, max_attempts=1))
    run(queue, name, JobOutcome.failed("boom"))
    assert queue.get_job(first).status == JobStatus.DEAD
    assert queue.enqueue(keyed(name)) == first
    queue.delete_job(first)
    assert queue.enqueue_unique(keyed(name)).created


# Many, batches and workflows ----------------------------------------------------------------
def test_enqueue_many_answers_each_job_in_order(queue):
    name = unique_queue("unique_many")
    holder = queue.enqueue(keyed(name, "a"))
    jobs = [keyed(name, "a"), keyed(name, "b"), Job(queue_name=name), keyed(name, "b")]
    results = queue.enqueue_many_unique(jobs)
    assert [r.created for r in results] == [False, True, True, False]
    assert results[0].id == holder
    assert results[1].id == jobs[1].id and results[3].id == jobs[1].id, "the first b holds b"
    assert queue.enqueue_many(jobs[:2]) == [holder, jobs[1].id]
    assert rows(queue, name) == 3


def test_a_job_that_waited_for_a_duplicate_waits_for_the_holder(queue):
    name = unique_queue("unique_deps")
    holder = queue.enqueue(keyed(name))
    duplicate = keyed(name)
    child = Job(queue_name=name, payload={"child": True}).depends_on_job(duplicate)
    results = queue.enqueue_many_unique([duplicate, child])
    assert [r.created for r in results] == [False, True]
    assert queue.get_job(child.id).depends_on == [str(holder)]
    assert queue.dequeue(name, DequeueOptions.batch(5))[0].id == holder, "the child waits"
    assert queue.dequeue(name, DequeueOptions.batch(5)) == []


def test_a_workflow_step_already_under_way_is_shared(queue):
    name = unique_queue("unique_workflow")
    holder = queue.enqueue(keyed(name, "fetch:feed"))
    fetch, parse = keyed(name, "fetch:feed"), Job(queue_name=name, payload={"parse": 1})
    workflow_id = queue.enqueue_workflow(JobGroup("feed").add_job(fetch).then(parse))
    running = run(queue, name)
    assert running.id == holder
    queue.finish_job_run(running, JobOutcome.completed())
    assert run(queue, name).id == parse.id, "the workflow's step ran after the holder"
    assert queue.get_job(parse.id).workflow_id == workflow_id
    assert queue.get_job(fetch.id) is None


def test_a_batch_counts_only_the_jobs_it_created(queue):
    name = unique_queue("unique_batch")
    held = queue.enqueue(keyed(name, "user:1"))
    batch_id = queue.enqueue_batch(
        JobBatch("sync", jobs=[keyed(name, "user:1"), keyed(name, "user:2")])
    )
    status = queue.get_batch_status(batch_id)
    assert (status.total_jobs, status.status) == (1, BatchStatus.PENDING)
    assert [job.unique_key for job in queue.get_batch_jobs(batch_id)] == ["user:2"]
    assert queue.get_job(held).batch_id is None


def test_a_group_of_duplicates_only_is_done_at_once(queue):
    name = unique_queue("unique_empty_group")
    queue.enqueue(keyed(name, "x"))
    batch = queue.get_batch_status(queue.enqueue_batch(JobBatch("b", jobs=[keyed(name, "x")])))
    assert (batch.total_jobs, batch.status) == (0, BatchStatus.COMPLETED)
    workflow_id = queue.enqueue_workflow(JobGroup("w").add_job(keyed(name, "x")))
    workflow = queue.store.get_group(Workflow, workflow_id)
    assert (workflow.total_jobs, workflow.status) == (0, WorkflowStatus.COMPLETED)


# Operators ------------------------------------------------------------------------------------
def test_retrying_a_job_whose_key_another_job_holds_is_refused(queue):
    name = unique_queue("unique_retry")
    first = queue.enqueue(keyed(name))
    queue.mark_job_dead(first)
    second = queue.enqueue(keyed(name))
    with pytest.raises(InvalidJobTransition, match=f"job {second} holds the unique key"):
        queue.retry_job(first)
    assert queue.get_job(first).status == JobStatus.DEAD, "the refusal changed nothing"
    queue.cancel_job(second)
    queue.retry_job(first)
    assert queue.get_job(first).unique_slot is not None, "the retried job took its key back"
    assert queue.enqueue(keyed(name)) == first


def test_retrying_a_job_that_kept_its_slot(queue):
    name = unique_queue("unique_retry_kept")
    first = queue.enqueue(keyed(name))
    queue.mark_job_dead(first)
    queue.retry_job(first)
    assert queue.enqueue(keyed(name)) == first


# Input ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"unique_key": ""}, "a unique key must be a non-empty string"),
        ({"unique_key": "x" * 256}, "the limit is 255"),
        ({"unique_key": "a\x00b"}, "NUL"),
        ({"unique_key": 42}, "a unique key must be a non-empty string"),
        ({"unique_key": "k", "unique_statuses": ["Sleeping"]}, "unknown status"),
        ({"unique_key": "k", "unique_statuses": "Pending"}, "a list of job statuses"),
        ({"unique_key": "k", "unique_statuses": 3}, "a list of job statuses"),
        ({"unique_key": "k", "unique_period": 60}, "unique_period must be a positive timedelta"),
        ({"unique_key": "k", "unique_period": timedelta(0)}, "positive timedelta"),
        ({"unique_key": "k", "unique_period": timedelta(days=400)}, "at most 365 days"),
        ({"unique_key": "k", "unique_statuses": []}, "never held"),
        ({"unique_period": timedelta(hours=1)}, "need a unique_key"),
        ({"schedule_name": "nightly"}, "given by a sync"),
    ],
)
def test_bad_unique_options_are_refused_and_write_nothing(queue, fields, message):
    name = unique_queue("unique_bad")
    with pytest.raises(InvalidJob, match=message):
        queue.enqueue_many([Job(queue_name=name), Job(queue_name=name, **fields)])
    assert rows(queue, name) == 0


def test_the_scope_is_stored_normalised(queue):
    name = unique_queue("unique_normalised")
    statuses = (JobStatus.DEAD, "Pending")
    job_id = queue.enqueue(keyed(name, unique_statuses=statuses, unique_period=timedelta(1)))
    stored = queue.get_job(job_id)
    assert stored.unique_statuses == ["Pending", "Dead"]
    assert stored.unique_period == timedelta(days=1)
    assert stored.unique_scope == {"statuses": ["Pending", "Dead"], "period": 86400.0}


def test_unique_key_for_a_payload():
    assert unique_key_for({"b": 2, "a": 1}) == unique_key_for({"a": 1, "b": 2}) == '{"a":1,"b":2}'
    assert unique_key_for({"a": 1, "b": 2, "c": 3}, "a", "c") == '{"a":1,"c":3}'
    long = unique_key_for({"text": "x" * 500})
    assert long.startswith("sha256:") and len(long) == 71
    assert long != unique_key_for({"text": "x" * 501})
