"""`manage.py runworker` (a child process) runs Django tasks in their exact priority order,
any values in -100..100 (a larger one sooner), and keeps a queue's five levels first for
the jobs of `queues.api` enqueued beside them."""

from __future__ import annotations

import pytest

from queues.api import DequeueOptions, Job, JobPriority, JobQueue
from tests.conftest import unique_queue
from tests.workers.runworker.test_runworker import runworker  # noqa: F401  (the fixture)
from tests.workers.support import priority_jobs as jobs

pytestmark = pytest.mark.django_db(transaction=True)


def test_tasks_run_in_their_exact_priority_order(runworker, tmp_path):  # noqa: F811
    log = tmp_path / "order.log"
    # Enqueued in no particular order; -2, 1, 2 and 10 share one of the five levels.
    priorities = [-2, 2, 10, 0, -50, 70, 1, -100, 100, 21, -21]
    for priority in priorities:
        jobs.appends.using(priority=priority).enqueue(str(log), str(priority))
    run = runworker(
        jobs.PRIORITIES, "--burst", "--batch-size", "1", "--concurrency", "1",
        "--include", jobs.__name__,
    )  # fmt: skip
    assert run.wait() == 0, run.text()
    assert log.read_text().split() == [str(p) for p in sorted(priorities, reverse=True)]


def test_a_task_and_a_job_of_one_level_order_by_the_task_s_priority():
    # A queues.api job's level is its priority; a task of that level runs before it when its
    # own priority is above 0, after it when below, and the level comes first.
    queue, name = JobQueue(), unique_queue("pr_mixed")
    task = jobs.appends.using(queue_name=name)
    low = task.using(priority=-5).enqueue("/dev/null", "low").id
    api = queue.enqueue(Job(queue_name=name, payload={}, priority=JobPriority.NORMAL))
    high = task.using(priority=5).enqueue("/dev/null", "high").id
    critical = queue.enqueue(Job(queue_name=name, payload={}, priority=JobPriority.CRITICAL))
    order = [str(queue.dequeue_one(name).id) for _ in range(4)]
    assert order == [str(critical), high, str(api), low]


def test_a_batch_claim_hands_its_jobs_over_in_claim_order():
    # The claim's rows come back in no set order; the queue sorts them, and needs each
    # job's task_priority from the claim to do so.
    queue, name = JobQueue(), unique_queue("pr_batch")
    task = jobs.appends.using(queue_name=name)
    ids = [task.using(priority=p).enqueue("/dev/null", str(p)).id for p in (-3, 7, 0, 12, -1)]
    claimed = queue.dequeue(name, DequeueOptions.batch(5))
    assert [str(job.id) for job in claimed] == [ids[3], ids[1], ids[2], ids[4], ids[0]]
