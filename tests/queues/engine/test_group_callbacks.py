"""Callbacks of batches and workflows: which fire for each outcome, once each, in the
transaction of the outcome that decides them, with the group's tally in their payload; a
task as a callback; an empty group's at enqueue; bad declarations refused."""

from __future__ import annotations

from datetime import timedelta

import pytest

from queues.api import (
    BatchStatus,
    DequeueOptions,
    FailurePolicy,
    InvalidBatch,
    InvalidWorkflow,
    Job,
    JobBatch,
    JobGroup,
    JobOutcome,
    JobStatus,
    PartialFailureMode,
    RetryStrategy,
    WorkflowStatus,
)
from queues.models import Batch, Workflow
from queues.tasks.jobs import TASK_KEY
from tests.queues.conftest import unique_queue
from tests.queues.support.task_functions import get_attempt


def members(name, n, **fields):
    return [Job(queue_name=name, payload={"i": i}, max_attempts=1, **fields) for i in range(n)]


def with_all_callbacks(group, name):
    """`group` with a callback per event, each a job of the queue `name + "_cb"`."""
    cb = f"{name}_cb"
    return (
        group.on_success(Job(queue_name=cb, payload={"event": "success", "keep": 1}))
        .on_failure(Job(queue_name=cb, payload={"event": "failure"}))
        .on_complete(Job(queue_name=cb, payload={"event": "complete"}))
    )


def fired(queue, name) -> dict[str, dict]:
    """The callback jobs enqueued so far (claimed now): {event: their payload's tally}."""
    jobs = queue.dequeue(f"{name}_cb", DequeueOptions.batch(10))
    tallies = {job.payload["event"]: job.payload["group"] for job in jobs}
    assert len(tallies) == len(jobs), "a callback was enqueued twice"
    return tallies


def finish(queue, runs, outcome):
    for run in runs:
        queue.finish_job_run(run, outcome)


def test_a_completed_batch_calls_success_and_complete(queue):
    name = unique_queue("cb_ok")
    batch = with_all_callbacks(JobBatch("nightly", jobs=members(name, 3)), name)
    batch_id = queue.enqueue_batch(batch)
    first, *rest = queue.dequeue(name, DequeueOptions.batch(10))
    queue.finish_job_run(first, JobOutcome.completed())
    assert fired(queue, name) == {}
    finish(queue, rest, JobOutcome.completed())
    tallies = fired(queue, name)
    assert sorted(tallies) == ["complete", "success"]
    assert tallies["success"] == {
        "kind": "batch",
        "id": str(batch_id),
        "name": "nightly",
        "event": "success",
        "status": BatchStatus.COMPLETED,
        "total_jobs": 3,
        "completed_jobs": 3,
        "failed_jobs": 0,
        "pending_jobs": 0,
    }
    row = queue.store.get_group(Batch, batch_id)
    assert set(row.callback_jobs) == {"success", "complete"}
    success = queue.get_job(row.callback_jobs["success"])
    assert success.payload["keep"] == 1, "the callback's own payload is kept"


def test_continue_on_error_calls_failure_once_every_job_finished(queue):
    name = unique_queue("cb_partial")
    batch = with_all_callbacks(JobBatch("b", jobs=members(name, 3)), name)
    batch_id = queue.enqueue_batch(batch)
    first, *rest = queue.dequeue(name, DequeueOptions.batch(10))
    queue.finish_job_run(first, JobOutcome.failed("bad"))
    assert fired(queue, name) == {}, "a continue-on-error batch fails at its end"
    finish(queue, rest, JobOutcome.completed())
    tallies = fired(queue, name)
    assert sorted(tallies) == ["complete", "failure"]
    assert tallies["failure"]["status"] == BatchStatus.PARTIALLY_FAILED
    assert (tallies["failure"]["completed_jobs"], tallies["failure"]["failed_jobs"]) == (2, 1)
    assert queue.get_batch_status(batch_id).status == BatchStatus.PARTIALLY_FAILED


@pytest.mark.parametrize("mode", [PartialFailureMode.CONTINUE_ON_ERROR, "CollectErrors"])
def test_a_batch_whose_jobs_all_failed_calls_failure(queue, mode):
    name = unique_queue("cb_allfail")
    batch = with_all_callbacks(
        JobBatch("b", jobs=members(name, 2), partial_failure_mode=mode), name
    )
    queue.enqueue_batch(batch)
    finish(queue, queue.dequeue(name, DequeueOptions.batch(10)), JobOutcome.failed("no"))
    tallies = fired(queue, name)
    assert sorted(tallies) == ["complete", "failure"]
    assert tallies["failure"]["status"] == BatchStatus.FAILED


def test_fail_fast_calls_failure_at_once_and_complete_when_the_last_job_ends(queue):
    name = unique_queue("cb_fast")
    batch = JobBatch("b", jobs=members(name, 4), partial_failure_mode="FailFast")
    batch_id = queue.enqueue_batch(with_all_callbacks(batch, name))
    failing, running = queue.dequeue(name, DequeueOptions.batch(2))
    queue.finish_job_run(failing, JobOutcome.failed("boom"))
    tallies = fired(queue, name)
    assert list(tallies) == ["failure"], "complete waits for the job still running"
    assert (tallies["failure"]["failed_jobs"], tallies["failure"]["pending_jobs"]) == (3, 1)
    queue.finish_job_run(running, JobOutcome.completed())
    tallies = fired(queue, name)
    assert list(tallies) == ["complete"]
    assert tallies["complete"]["status"] == BatchStatus.FAILED
    assert queue.get_batch_status(batch_id).pending_jobs == 0


def test_a_retried_job_that_then_succeeds_calls_success_only(queue):
    name = unique_queue("cb_retry")
    retry = RetryStrategy.fixed(timedelta(0))
    batch = JobBatch("b", jobs=members(name, 2, retry_strategy=retry))
    for job in batch.jobs:
        job.max_attempts = 2
    queue.enqueue_batch(with_all_callbacks(batch, name))
    first, second = queue.dequeue(name, DequeueOptions.batch(10))
    assert queue.finish_job_run(first, JobOutcome.failed("flaky")).status == JobStatus.PENDING
    queue.finish_job_run(second, JobOutcome.completed())
    assert fired(queue, name) == {}
    queue.clock.advance(timedelta(seconds=1))
    (again,) = queue.dequeue(name, DequeueOptions.batch(10))
    queue.finish_job_run(again, JobOutcome.completed())
    assert sorted(fired(queue, name)) == ["complete", "success"]


def test_a_fail_fast_workflow_calls_failure_and_complete(queue):
    name = unique_queue("cb_wf_fast")
    a, b, c = members(name, 3)
    group = with_all_callbacks(JobGroup("wf").add_job(a).then(b).then(c), name)
    workflow_id = queue.enqueue_workflow(group)
    (run,) = queue.dequeue(name, DequeueOptions.batch(10))
    queue.finish_job_run(run, JobOutcome.failed("broken"))
    tallies = fired(queue, name)
    assert sorted(tallies) == ["complete", "failure"]
    assert tallies["failure"]["kind"] == "workflow"
    assert tallies["failure"]["status"] == WorkflowStatus.FAILED
    assert (tallies["failure"]["failed_jobs"], tallies["failure"]["total_jobs"]) == (3, 3)
    assert queue.store.get_group(Workflow, workflow_id).status == WorkflowStatus.FAILED


def test_a_continue_on_failure_workflow_fails_at_its_end(queue):
    name = unique_queue("cb_wf_cont")
    a, b, c = members(name, 3)
    group = JobGroup("wf", FailurePolicy.CONTINUE_ON_FAILURE).add_parallel_jobs([a, b]).then(c)
    queue.enqueue_workflow(with_all_callbacks(group, name))
    run_a, run_b = queue.dequeue(name, DequeueOptions.batch(10))
    failing, other = (run_a, run_b) if run_a.id == a.id else (run_b, run_a)
    queue.finish_job_run(failing, JobOutcome.failed("broken"))  # c fails with it
    assert fired(queue, name) == {}, "b still runs"
    queue.finish_job_run(other, JobOutcome.completed())
    tallies = fired(queue, name)
    assert sorted(tallies) == ["complete", "failure"]
    assert (tallies["complete"]["completed_jobs"], tallies["complete"]["failed_jobs"]) == (1, 2)


def test_a_completed_workflow_calls_success(queue):
    name = unique_queue("cb_wf_ok")
    a, b = members(name, 2)
    workflow_id = queue.enqueue_workflow(
        with_all_callbacks(JobGroup("wf").add_job(a).then(b), name)
    )
    for _ in range(2):
        finish(queue, queue.dequeue(name, DequeueOptions.batch(10)), JobOutcome.completed())
    tallies = fired(queue, name)
    assert sorted(tallies) == ["complete", "success"]
    assert tallies["success"]["id"] == str(workflow_id)
    assert tallies["success"]["status"] == WorkflowStatus.COMPLETED


def test_an_operator_cancelling_a_workflow_job_fails_the_workflow(queue):
    name = unique_queue("cb_wf_cancel")
    a, b = members(name, 2)
    workflow_id = queue.enqueue_workflow(
        with_all_callbacks(JobGroup("wf").add_job(a).then(b), name)
    )
    queue.cancel_job(a.id)
    tallies = fired(queue, name)
    assert sorted(tallies) == ["complete", "failure"]
    assert tallies["failure"]["failed_jobs"] == 2
    # Nothing fires again: a retry of the cancelled job, then its success.
    queue.retry_job(a.id)
    finish(queue, queue.dequeue(name, DequeueOptions.batch(10)), JobOutcome.completed())
    assert fired(queue, name) == {}
    row = queue.store.get_group(Workflow, workflow_id)
    assert set(row.callback_jobs) == {"failure", "complete"}


def test_deleting_the_last_pending_job_completes_the_batch(queue):
    name = unique_queue("cb_delete")
    batch = with_all_callbacks(JobBatch("b", jobs=members(name, 2)), name)
    queue.enqueue_batch(batch)
    (run,) = queue.dequeue(name, DequeueOptions.batch(1))
    queue.finish_job_run(run, JobOutcome.completed())
    (left,) = [job for job in batch.jobs if job.id != run.id]
    queue.delete_job(left.id)
    tallies = fired(queue, name)
    assert sorted(tallies) == ["complete", "success"]
    assert tallies["success"]["total_jobs"] == 1


def test_deleting_a_finished_batchs_failed_job_changes_neither_status_nor_callbacks(queue):
    """A deletion is no outcome: the partly failed batch stays so, and success never fires
    after its failure did."""
    name = unique_queue("cb_del_failed")
    batch = with_all_callbacks(JobBatch("b", jobs=members(name, 2)), name)
    batch_id = queue.enqueue_batch(batch)
    failing, passing = queue.dequeue(name, DequeueOptions.batch(2))
    queue.finish_job_run(failing, JobOutcome.failed("bad"))
    queue.finish_job_run(passing, JobOutcome.completed())
    assert sorted(fired(queue, name)) == ["complete", "failure"]
    finished_at = queue.get_batch_status(batch_id).completed_at
    queue.delete_job(failing.id)
    status = queue.get_batch_status(batch_id)
    assert (status.status, status.total_jobs, status.failed_jobs) == (
        BatchStatus.PARTIALLY_FAILED,
        1,
        0,
    )
    assert status.completed_at == finished_at
    assert fired(queue, name) == {}, "a deletion called a callback"


def test_deleting_a_failed_workflows_failed_job_keeps_it_failed(queue):
    name = unique_queue("cb_del_wf")
    group = JobGroup("wf", failure_policy=FailurePolicy.CONTINUE_ON_FAILURE)
    a, b = members(name, 2)
    group = with_all_callbacks(group.add_parallel_jobs([a, b]), name)
    workflow_id = queue.enqueue_workflow(group)
    failing, passing = queue.dequeue(name, DequeueOptions.batch(2))
    queue.finish_job_run(failing, JobOutcome.failed("bad"))
    queue.finish_job_run(passing, JobOutcome.completed())
    assert sorted(fired(queue, name)) == ["complete", "failure"]
    queue.delete_job(failing.id)
    assert queue.store.get_group(Workflow, workflow_id).status == WorkflowStatus.FAILED
    assert fired(queue, name) == {}


def test_a_group_whose_jobs_are_all_deleted_is_done_and_calls_its_callbacks_once(queue):
    """Every job deleted before any ran: the group is done, as an empty one is at enqueue;
    deleted again after it finished, it stays as it was."""
    name = unique_queue("cb_del_all")
    batch = with_all_callbacks(JobBatch("b", jobs=members(name, 2)), name)
    batch_id = queue.enqueue_batch(batch)
    queue.delete_jobs([job.id for job in batch.jobs])
    status = queue.get_batch_status(batch_id)
    assert (status.status, status.total_jobs) == (BatchStatus.COMPLETED, 0)
    assert status.completed_at is not None
    assert sorted(fired(queue, name)) == ["complete", "success"]

    done = with_all_callbacks(JobBatch("c", jobs=members(name, 1)), name)
    done_id = queue.enqueue_batch(done)
    finish(queue, queue.dequeue(name, DequeueOptions.batch(1)), JobOutcome.completed())
    assert sorted(fired(queue, name)) == ["complete", "success"]
    finished_at = queue.get_batch_status(done_id).completed_at
    queue.delete_jobs([job.id for job in done.jobs])
    status = queue.get_batch_status(done_id)
    assert (status.status, status.completed_at) == (BatchStatus.COMPLETED, finished_at)
    assert fired(queue, name) == {}


@pytest.mark.parametrize("kind", ["batch", "workflow"])
def test_an_empty_group_calls_its_callbacks_at_enqueue_once(queue, kind):
    name = unique_queue("cb_empty")
    holder = Job(queue_name=name, unique_key="k")
    queue.enqueue(holder)
    dup = Job(queue_name=name, unique_key="k")
    group = JobBatch("b", jobs=[dup]) if kind == "batch" else JobGroup("wf").add_job(dup)
    group = with_all_callbacks(group, name)
    enqueue = queue.enqueue_batch if kind == "batch" else queue.enqueue_workflow
    group_id = enqueue(group)
    tallies = fired(queue, name)
    assert sorted(tallies) == ["complete", "success"]
    assert tallies["success"]["total_jobs"] == 0 and tallies["success"]["id"] == str(group_id)
    # The holder's end touches no tally of the group: nothing more.
    finish(queue, queue.dequeue(name, DequeueOptions.batch(10)), JobOutcome.completed())
    assert fired(queue, name) == {}


def test_a_task_is_a_callback_with_its_arguments(queue):
    name = unique_queue("cb_task")
    task = get_attempt.using(queue_name=f"{name}_tasks", priority=30)
    batch_id = queue.enqueue_batch(
        JobBatch("b", jobs=members(name, 1)).on_success(task, args=["done"])
    )
    finish(queue, queue.dequeue(name, DequeueOptions.batch(10)), JobOutcome.completed())
    (job,) = queue.dequeue(f"{name}_tasks", DequeueOptions.batch(10))
    assert job.payload[TASK_KEY]["path"] == get_attempt.module_path
    assert (job.payload["args"], job.payload["kwargs"]) == (["done"], {})
    assert job.payload["group"]["id"] == str(batch_id)
    assert (job.task_priority, job.max_attempts) == (30, 1)


def test_callbacks_are_not_called_while_a_group_runs(queue):
    name = unique_queue("cb_none")
    batch = with_all_callbacks(JobBatch("b", jobs=members(name, 2)), name)
    batch_id = queue.enqueue_batch(batch)
    queue.dequeue(name, DequeueOptions.batch(10))
    assert fired(queue, name) == {}
    assert queue.store.get_group(Batch, batch_id).callback_jobs == {}


BAD = [
    (lambda name: "not a job", "must be a Job or a django.tasks task"),
    (lambda name: Job(queue_name=name, payload={"group": 1}), "without a 'group' key"),
    (lambda name: Job(queue_name=name, payload=[1]), "must be a dict"),
    (lambda name: Job(queue_name=" padded "), "on_success callback: a queue name"),
    (lambda name: Job(queue_name=name, unique_key="k"), "unique"),
    (lambda name: Job(queue_name=name, cron_schedule="* * * * *"), "recurring"),
    (lambda name: Job(queue_name=name, depends_on=[str(Job().id)]), "wait for other jobs"),
    (lambda name: Job(queue_name=name, max_attempts=0), "max_attempts"),
]


@pytest.mark.parametrize(("target", "error"), BAD)
@pytest.mark.parametrize("kind", ["batch", "workflow"])
def test_a_bad_callback_is_refused_and_nothing_written(queue, target, error, kind):
    name = unique_queue("cb_bad")
    if kind == "batch":
        group, enqueue, refusal = (
            JobBatch("b", jobs=members(name, 1)),
            queue.enqueue_batch,
            InvalidBatch,
        )
    else:
        group, enqueue, refusal = (
            JobGroup("w").add_job(members(name, 1)[0]),
            queue.enqueue_workflow,
            InvalidWorkflow,
        )
    with pytest.raises(refusal, match=error):
        enqueue(group.on_success(target(name)))
    assert queue.dequeue(name, DequeueOptions.batch(10)) == []


def test_args_are_for_tasks_only(queue):
    name = unique_queue("cb_args")
    batch = JobBatch("b", jobs=members(name, 1)).on_failure(Job(queue_name=name), args=[1])
    with pytest.raises(InvalidBatch, match="args and kwargs are for a task"):
        queue.enqueue_batch(batch)


def test_a_task_with_arguments_json_cannot_hold_is_refused(queue):
    name = unique_queue("cb_task_bad")
    batch = JobBatch("b", jobs=members(name, 1)).on_complete(get_attempt, args=[object()])
    with pytest.raises(InvalidBatch, match="on_complete callback"):
        queue.enqueue_batch(batch)
    assert queue.dequeue(name, DequeueOptions.batch(10)) == []


def test_the_builders_chain():
    batch = JobBatch("b")
    job = Job(queue_name="q")
    assert batch.on_success(job).on_failure(job).on_complete(job) is batch
    group = JobGroup("w")
    assert group.on_success(job).on_failure(job).on_complete(job) is group


def test_a_failed_batch_retried_to_success_calls_success_then(queue):
    name = unique_queue("cb_back")
    batch = with_all_callbacks(JobBatch("b", jobs=members(name, 2)), name)
    batch_id = queue.enqueue_batch(batch)
    first, second = queue.dequeue(name, DequeueOptions.batch(10))
    queue.finish_job_run(first, JobOutcome.failed("bad"))
    queue.finish_job_run(second, JobOutcome.completed())
    assert sorted(fired(queue, name)) == ["complete", "failure"]
    queue.retry_job(first.id)
    finish(queue, queue.dequeue(name, DequeueOptions.batch(10)), JobOutcome.completed())
    assert list(fired(queue, name)) == ["success"], "complete was enqueued already"
    assert queue.get_batch_status(batch_id).status == BatchStatus.COMPLETED
    row = queue.store.get_group(Batch, batch_id)
    assert set(row.callback_jobs) == {"success", "failure", "complete"}


def test_a_job_of_the_group_is_not_its_callback(queue):
    name = unique_queue("cb_self")
    jobs = members(name, 2)
    with pytest.raises(InvalidBatch, match="a job of the group itself"):
        queue.enqueue_batch(JobBatch("b", jobs=jobs).on_complete(jobs[1]))
    assert queue.dequeue(name, DequeueOptions.batch(10)) == []


def test_a_task_of_another_backend_is_refused(queue, settings):
    settings.TASKS = {
        **settings.TASKS,
        "other": {"BACKEND": "django.tasks.backends.dummy.DummyBackend"},
    }
    name = unique_queue("cb_other")
    batch = JobBatch("b", jobs=members(name, 1)).on_success(get_attempt.using(backend="other"))
    with pytest.raises(InvalidBatch, match="not Hammerweb's"):
        queue.enqueue_batch(batch)
    assert queue.get_job(batch.jobs[0].id) is None
