"""The reaper and the pruner as services (the clock is a MockClock: no sleeps)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from queues.api import DequeueOptions, Job, JobOutcome, JobQueue, JobStatus, MockClock
from queues.models import FailedAttempt, ReaperRun, WorkerProcess
from queues.ops.maintenance import Pruner, Reaper
from queues.store.counters import completions
from tests.conftest import unique_queue

pytestmark = pytest.mark.django_db


def finished_jobs(queue, name, outcome, count):
    queue.enqueue_many([Job(queue_name=name, max_attempts=1) for _ in range(count)])
    jobs = queue.dequeue(name, DequeueOptions.batch(count))
    for job in jobs:
        queue.finish_job_run(job, outcome)
    return [job.id for job in jobs]


def test_pruner_deletes_only_what_finished_long_enough_ago_in_batches():
    clock = MockClock()
    queue = JobQueue(clock=clock)
    name, other = unique_queue("prune"), unique_queue("prune_live")
    old_done = finished_jobs(queue, name, JobOutcome.completed(), 5)
    old_dead = finished_jobs(queue, name, JobOutcome.failed("boom"), 2)
    live = queue.enqueue_many([Job(queue_name=other), Job(queue_name=other)])
    assert queue.dequeue_one(other).id in live  # one Running, one Pending
    clock.advance(timedelta(days=8))
    recent = finished_jobs(queue, name, JobOutcome.completed(), 1)

    result = Pruner(queue, older_than=timedelta(days=7), batch_size=2).run_once()
    assert result.jobs == 7
    remaining = set(Job.objects.filter(queue_name__in=[name, other]).values_list("id", flat=True))
    assert remaining == {*live, *recent}
    assert not remaining & {*old_done, *old_dead}


def test_pruner_deletes_old_reaper_runs_and_dead_worker_rows():
    clock = MockClock()
    queue = JobQueue(clock=clock)
    queue.requeue_stale_jobs()
    WorkerProcess.objects.create(hostname="h", pid=1, last_heartbeat_at=clock.now())
    clock.advance(timedelta(days=8))
    queue.requeue_stale_jobs()
    alive = WorkerProcess.objects.create(hostname="h", pid=2, last_heartbeat_at=clock.now())

    result = Pruner(queue, older_than=timedelta(days=7)).run_once()
    assert (result.reaper_runs, result.worker_processes) == (1, 1)
    assert ReaperRun.objects.count() == 1
    assert list(WorkerProcess.objects.values_list("id", flat=True)) == [alive.id]


def test_pruner_deletes_the_completion_counts_of_old_minutes():
    clock = MockClock(datetime(2026, 11, 29, 21, 5, 30, tzinfo=UTC))
    queue = JobQueue(clock=clock)
    name = unique_queue("prune_minutes")
    finished_jobs(queue, name, JobOutcome.completed(), 2)  # 21:05
    clock.advance(timedelta(minutes=1))
    finished_jobs(queue, name, JobOutcome.completed(), 1)  # 21:06
    clock.advance(timedelta(hours=24, seconds=-30))  # the next day, 21:06:00

    pruner = Pruner(queue, older_than=None, completions_kept=timedelta(hours=24))
    assert pruner.run_once().completion_counts == 1  # 21:05's row; 21:06 is a day ago
    assert list(minutes_kept(name)) == [datetime(2026, 11, 29, 21, 6, tzinfo=UTC)]
    clock.advance(timedelta(minutes=1))
    assert pruner.run_once().completion_counts == 1
    assert minutes_kept(name) == {}
    # older_than=None keeps the finished jobs themselves.
    assert Job.objects.filter(queue_name=name).count() == 3


def minutes_kept(name):
    far = timedelta(days=3650)
    now = datetime(2026, 11, 29, tzinfo=UTC)
    return completions.per_minute([name], now - far, now + far).get(name, {})


def test_reaper_takes_back_expired_leases_and_says_who_ran_it():
    clock = MockClock()
    queue = JobQueue(clock=clock)
    name = unique_queue("reap")
    job_id = queue.enqueue(Job(queue_name=name))
    queue.dequeue(name, DequeueOptions.batch(1).with_lease_duration(timedelta(seconds=30)))
    reaper = Reaper(queue, ran_by="host:1")
    assert reaper.run_once().requeued == []
    clock.advance(timedelta(seconds=31))
    assert reaper.run_once().requeued == [job_id]
    assert queue.get_job(job_id).status == JobStatus.PENDING
    assert ReaperRun.objects.filter(ran_by="host:1").count() == 2


@pytest.mark.parametrize(
    "kwargs",
    [
        {"older_than": timedelta(0)},
        {"batch_size": 0},
        {"interval": timedelta(seconds=-1)},
        # The dashboard reads the last 30 full minutes.
        {"completions_kept": timedelta(minutes=30)},
    ],
)
def test_pruner_validates_its_settings(kwargs):
    with pytest.raises(ValueError):
        Pruner(JobQueue(), **kwargs)


def test_pruner_deletes_the_history_with_its_jobs_and_old_rows_of_kept_jobs():
    clock = MockClock()
    queue = JobQueue(clock=clock)
    name = unique_queue("prune_history")
    (old_dead,) = finished_jobs(queue, name, JobOutcome.failed("boom"), 1)
    recurring = queue.enqueue(Job(queue_name=name, cron_schedule="* * * * *"))
    clock.advance(timedelta(minutes=2))
    queue.finish_job_run(queue.dequeue_one(name), JobOutcome.failed("nightly run failed"))
    clock.advance(timedelta(days=8, minutes=2))
    queue.finish_job_run(queue.dequeue_one(name), JobOutcome.failed("failed again"))

    result = Pruner(queue, older_than=timedelta(days=7), batch_size=1).run_once()
    assert result.jobs == 1 and result.failed_attempts == 1
    assert FailedAttempt.objects.filter(job_id=old_dead).count() == 0
    assert [row.error for row in queue.get_job_attempts(recurring)] == ["failed again"]
