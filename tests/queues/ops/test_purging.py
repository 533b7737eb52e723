"""Purging (`queues.ops.purging`) through the queue's store, on the database and in memory
alike: the purgeable jobs read a page at a time and deleted through `delete_jobs`, recurring
jobs and the jobs of groups kept alone, finished groups deleted whole."""

from __future__ import annotations

from datetime import timedelta

from queues.api import DequeueOptions, Job, JobBatch, JobGroup, JobOutcome, JobStatus
from queues.models import Batch, Workflow
from queues.ops import purging
from queues.store import Match
from tests.queues.conftest import unique_queue

MONTH = timedelta(days=30)


def finished(queue, name: str, count: int, outcome=None) -> list:
    queue.enqueue_many([Job(queue_name=name, max_attempts=1) for _ in range(count)])
    runs = queue.dequeue(name, DequeueOptions.batch(count))
    for run in runs:
        queue.finish_job_run(run, outcome or JobOutcome.completed())
    return [run.id for run in runs]


def finish_all(queue, name: str, outcome=None) -> None:
    while runs := queue.dequeue(name, DequeueOptions.batch(10)):
        for run in runs:
            queue.finish_job_run(run, outcome or JobOutcome.completed())


def test_a_purge_deletes_the_old_finished_jobs_and_groups_and_keeps_the_rest(queue):
    name, group_name = unique_queue("purge"), unique_queue("purge_groups")
    old = [*finished(queue, name, 3), *finished(queue, name, 2, JobOutcome.dead("x"))]
    recurring = queue.enqueue(Job(queue_name=unique_queue("purge_cron"), cron_schedule="0 * * * *"))
    queue.mark_job_dead(recurring, "stopped")  # finished, but a schedule's one row
    assert queue.get_job(recurring).status == JobStatus.DEAD
    members = [Job(queue_name=group_name), Job(queue_name=group_name)]
    batch_id = queue.enqueue_batch(JobBatch("done", jobs=members))
    first, second = Job(queue_name=group_name), Job(queue_name=group_name)
    workflow_id = queue.enqueue_workflow(JobGroup("w").add_job(first).then(second))
    finish_all(queue, group_name)
    busy_id = queue.enqueue_batch(JobBatch("busy", jobs=[Job(queue_name=unique_queue("purge"))]))
    queue.clock.advance(MONTH + timedelta(days=1))
    recent = finished(queue, name, 1)
    cutoff = queue.now() - MONTH

    pages = []
    result = purging.purge(queue, cutoff, size=2, progress=lambda r: pages.append(r.deleted))
    assert (result.deleted, result.kept, result.groups, result.group_jobs) == (5, 0, 2, 4)
    assert pages[:3] == [2, 4, 5]  # a page per transaction, then a note per group
    assert all(queue.get_job(job_id) is None for job_id in old)
    assert queue.store.get_group(Batch, batch_id) is None
    assert queue.store.get_group(Workflow, workflow_id) is None
    assert queue.get_job(first.id) is None and queue.get_job(second.id) is None
    assert queue.get_job(recurring) is not None and queue.get_job(recent[0]) is not None
    assert queue.store.get_group(Batch, busy_id) is not None  # its job never ran
    assert purging.purge(queue, cutoff).deleted == 0


def test_a_narrower_selection_is_purged_alone(queue):
    mine, other = unique_queue("purge_narrow"), unique_queue("purge_wide")
    ids = finished(queue, mine, 2)
    kept = finished(queue, other, 2)
    queue.clock.advance(MONTH)

    class OneQueue(purging.Purgeable):
        def rows(self, using):
            return super().rows(using).filter(queue_name=mine)

        def matches(self, job):
            return super().matches(job) and job.queue_name == mine

    result = purging.purge(queue, queue.now(), OneQueue(queue.now()), groups=False)
    assert result.deleted == 2 and all(queue.get_job(job_id) is None for job_id in ids)
    assert all(queue.get_job(job_id) is not None for job_id in kept)


def test_the_rule_as_a_query_and_as_a_test_of_one_row_agree(queue):
    name = unique_queue("purge_rule")
    done = finished(queue, name, 1)
    timed_out = finished(queue, name, 1, JobOutcome.timed_out())
    grouped = queue.enqueue_batch(JobBatch("b", jobs=[Job(queue_name=name)]))
    finish_all(queue, name)
    pending = queue.enqueue(Job(queue_name=name))
    queue.clock.advance(timedelta(hours=1))
    rule = purging.Purgeable(queue.now())
    rows = queue.store.find_jobs(Match(queue_name=name))
    assert len(rows) == 4
    selected = set(queue.store.select_ids(rule, among=[job.id for job in rows]))
    assert selected == {job.id for job in rows if rule.matches(job)} == {*done, *timed_out}
    assert pending not in selected and grouped not in selected
