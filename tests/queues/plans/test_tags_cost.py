"""What tags cost, counted in statements on the database of the run: nothing for a job
without tags, one INSERT for the tags of a whole enqueue, and nothing on any job's claim and
run writes (the worker's hot path): the claim returns the tags with the row."""

from __future__ import annotations

import pytest

from queues.api import DequeueOptions, Job, JobOutcome, JobQueue
from tests.queues.conftest import unique_queue
from tests.queues.plans.test_unique_cost import _kinds, statements

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_tags_of_an_enqueue_are_one_insert_and_no_read():
    name = unique_queue("tags_cost_insert")
    queue = JobQueue()
    queue.enqueue(Job(queue_name=name))  # the first connection's set-up is not counted
    with statements() as sql:
        queue.enqueue_many([Job(queue_name=name, tags=["a", f"n{i}"]) for i in range(20)])
    kinds = _kinds(sql)
    assert kinds.count("INSERT") == 2, sql
    assert not [k for k in kinds if k in ("SELECT", "SAVEPOINT", "UPDATE")], sql
    with statements() as sql:
        queue.enqueue_many([Job(queue_name=name, meta={"only": "meta"}) for _ in range(20)])
    assert _kinds(sql).count("INSERT") == 1, "meta alone is a column of the row"


def _run(queue: JobQueue, name: str, tags: list[str]) -> tuple[list[str], list[Job]]:
    queue.enqueue_many([Job(queue_name=name, tags=tags) for _ in range(2)])
    with statements() as sql:
        claimed = queue.dequeue(name, DequeueOptions.batch(2))
        queue.finish_and_start_runs([(claimed[0], JobOutcome.completed())], [claimed[1]])
        queue.heartbeat_jobs([claimed[1]], DequeueOptions().lease_duration)
        queue.finish_job_run(claimed[1], JobOutcome.failed("boom"))
    return sql, claimed


def test_a_tagged_jobs_claim_and_run_writes_are_a_plain_jobs():
    queue = JobQueue()
    plain, _ = _run(queue, unique_queue("tags_cost_plain"), [])
    tagged, claimed = _run(queue, unique_queue("tags_cost_tagged"), ["billing", "eu"])
    assert plain == tagged
    assert not [s for s in tagged if "jobtag" in s.lower()], "no run write touches the tags"
    assert [job.tags for job in claimed] == [["billing", "eu"]] * 2, "the claim returns them"
