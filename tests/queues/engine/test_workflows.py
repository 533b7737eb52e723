"""Dependencies and workflow failure policies."""

from __future__ import annotations

from datetime import timedelta

import pytest

from queues.api import (
    DequeueOptions,
    FailurePolicy,
    InvalidWorkflow,
    Job,
    JobGroup,
    JobOutcome,
    JobStatus,
)
from tests.queues.conftest import unique_queue


def jobs(name, n):
    return [Job(queue_name=name, payload={"step": i}, max_attempts=1) for i in range(n)]


def run_all(queue, name, outcome_for):
    """Claim and finish everything claimable, `outcome_for(job)` deciding each outcome."""
    while batch := queue.dequeue(name, DequeueOptions.batch(10)):
        for job in batch:
            queue.finish_job_run(job, outcome_for(job))


def test_then_waits_for_every_earlier_job(queue):
    name = unique_queue("wf_then")
    a, b, c = jobs(name, 3)
    queue.enqueue_workflow(JobGroup("pipeline").add_parallel_jobs([a, b]).then(c))
    claimed = queue.dequeue(name, DequeueOptions.batch(10))
    assert {job.id for job in claimed} == {a.id, b.id}
    first, second = claimed
    assert queue.finish_job_run(first, JobOutcome.completed()).unblocked == []
    assert queue.dequeue(name, DequeueOptions.batch(10)) == []
    assert queue.finish_job_run(second, JobOutcome.completed()).unblocked == [c.id]
    assert [job.id for job in queue.dequeue(name, DequeueOptions.batch(10))] == [c.id]


def test_fail_fast_fails_the_rest_of_the_workflow(queue):
    name = unique_queue("wf_fast")
    a, b, c, d = jobs(name, 4)
    group = JobGroup("ff").add_parallel_jobs([a, b]).then(c).then(d)
    workflow_id = queue.enqueue_workflow(group)
    run_a, run_b = queue.dequeue(name, DequeueOptions.batch(10))
    failing = run_a if run_a.id == a.id else run_b
    recorded = queue.finish_job_run(failing, JobOutcome.failed("broken"))
    assert recorded.status == JobStatus.DEAD
    assert set(recorded.cancelled) == {c.id, d.id}
    for job_id in (c.id, d.id):
        stored = queue.get_job(job_id)
        assert stored.status == JobStatus.FAILED
        assert stored.error_message.startswith(f"Workflow failed: job {failing.id} failed")
    other = run_b if failing is run_a else run_a
    assert queue.get_job(other.id).status == JobStatus.RUNNING, "running jobs finish"
    if hasattr(queue, "using"):
        from queues.models import Workflow

        assert Workflow.objects.get(id=workflow_id).status == "failed"


def test_continue_on_failure_fails_only_transitive_dependents(queue):
    name = unique_queue("wf_continue")
    root, side, child, grandchild = jobs(name, 4)
    child.depends_on_job(root)
    grandchild.depends_on_job(child)
    group = JobGroup("cf", failure_policy=FailurePolicy.CONTINUE_ON_FAILURE)
    group.add_parallel_jobs([root, side, child, grandchild])
    queue.enqueue_workflow(group)
    claimed = {job.id: job for job in queue.dequeue(name, DequeueOptions.batch(10))}
    assert set(claimed) == {root.id, side.id}
    recorded = queue.finish_job_run(claimed[root.id], JobOutcome.dead("no"))
    assert set(recorded.cancelled) == {child.id, grandchild.id}
    assert queue.get_job(grandchild.id).error_message == f"Dependency failed: job {root.id} failed"
    assert queue.finish_job_run(claimed[side.id], JobOutcome.completed()).status == "Completed"


def test_manual_policy_keeps_dependents_waiting_until_a_retry(queue):
    name = unique_queue("wf_manual")
    parent, child = jobs(name, 2)
    queue.enqueue_workflow(
        JobGroup("m", failure_policy=FailurePolicy.MANUAL).add_job(parent).then(child)
    )
    run = queue.dequeue_one(name)
    assert queue.finish_job_run(run, JobOutcome.failed("x")).cancelled == []
    assert queue.get_job(child.id).status == JobStatus.PENDING
    assert queue.dequeue(name) == []
    queue.retry_job(parent.id)
    run = queue.dequeue_one(name)
    assert run.id == parent.id and run.attempts == 1, "a retried dead job gets its attempts back"
    assert queue.finish_job_run(run, JobOutcome.completed()).unblocked == [child.id]


def test_late_dependents_are_settled_at_insert(queue):
    name = unique_queue("late")
    done, dead = jobs(name, 2)
    queue.enqueue_many([done, dead])
    for run in queue.dequeue(name, DequeueOptions.batch(2)):
        outcome = JobOutcome.completed() if run.id == done.id else JobOutcome.dead("x")
        queue.finish_job_run(run, outcome)
    ready = queue.enqueue(Job(queue_name=name, payload={}, depends_on=[done.id]))
    doomed = queue.enqueue(Job(queue_name=name, payload={}, depends_on=[done.id, dead.id]))
    assert queue.get_job(doomed).status == JobStatus.FAILED
    assert [job.id for job in queue.dequeue(name, DequeueOptions.batch(5))] == [ready]


def test_unknown_dependency_and_cycles_are_refused(queue):
    name = unique_queue("wf_bad")
    orphan = Job(queue_name=name, payload={})
    orphan.depends_on = ["00000000-0000-0000-0000-000000000001"]
    with pytest.raises(InvalidWorkflow):
        queue.enqueue(orphan)
    a, b = jobs(name, 2)
    a.depends_on_job(b)
    b.depends_on_job(a)
    with pytest.raises(InvalidWorkflow, match="cycle"):
        queue.enqueue_workflow(JobGroup("loop").add_parallel_jobs([a, b]))
    stranger = Job(queue_name=name, payload={})
    lonely = Job(queue_name=name, payload={}).depends_on_job(stranger)
    with pytest.raises(InvalidWorkflow, match="not in workflow"):
        queue.enqueue_workflow(JobGroup("partial").add_job(lonely))
    assert sum(queue.get_job_counts_by_status(name).values()) == 0, "nothing was written"


def test_deleting_the_last_unfinished_parent_frees_its_dependents(queue):
    name = unique_queue("wf_delete")
    done, dropped = jobs(name, 2)
    dropped.scheduled_at = dropped.created_at + timedelta(days=1)  # never due in this test
    child = Job(queue_name=name, payload={"child": True})
    child.depends_on_job(done).depends_on_job(dropped)
    queue.enqueue_many([done, dropped, child])
    run = queue.dequeue_one(name)
    assert run.id == done.id
    queue.finish_job_run(run, JobOutcome.completed())
    assert queue.dequeue(name) == [], "the child ran before its parents"
    queue.delete_job(dropped.id)
    assert [job.id for job in queue.dequeue(name, DequeueOptions.batch(5))] == [child.id]
