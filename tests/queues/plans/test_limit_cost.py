"""What a limit costs, counted in statements on the database of this run: nothing on an
unlimited queue's claim (exactly the catalogue's claim, as before limits), and on a limited
queue's the lock of its config row and one count before the same claim."""

from __future__ import annotations

import pytest

from queues.api import DequeueOptions, Job, JobQueue
from queues.engine import limits
from tests.queues.conftest import unique_queue
from tests.queues.plans.test_unique_cost import statements

pytestmark = pytest.mark.django_db(transaction=True)
BATCH = DequeueOptions.batch(5)


def _claim_sql(queue: JobQueue) -> list[str]:
    """The catalogue's statements of a plain strict claim on this vendor."""
    queries, vendor = queue.store.queries, queue.store.vendor
    return [queries["claim_batch"], *([queries["mark_claimed"]] if vendor == "mysql" else [])]


def _begin(queue: JobQueue) -> list[str]:
    """What opens the claim's transaction, as far as the statements show it: SQLite's BEGIN
    IMMEDIATE is one (PostgreSQL's and MySQL's BEGIN are the driver's, not seen here)."""
    return ["BEGIN IMMEDIATE"] if queue.store.vendor == "sqlite" else []


def _queue_of(queue: JobQueue, prefix: str, jobs: int = 20) -> str:
    name = unique_queue(prefix)
    queue.enqueue_many([Job(queue_name=name) for _ in range(jobs)])
    return name


def test_an_unlimited_claim_runs_exactly_the_catalogues_claim():
    queue = JobQueue()
    name = _queue_of(queue, "cost_unlimited")
    queue.dequeue(name, BATCH)  # the first claim of a queue reads its configuration
    with statements() as sql:
        assert len(queue.dequeue(name, BATCH)) == 5
    assert sql == [*_begin(queue), *_claim_sql(queue)]


def test_a_queue_whose_limit_was_removed_claims_as_an_unlimited_one():
    queue = JobQueue()
    name = _queue_of(queue, "cost_removed")
    queue.queue_config(name, max_running=2)
    queue.queue_config(name, max_running=None)
    with statements() as sql:
        assert len(queue.dequeue(name, BATCH)) == 5
    assert sql == [*_begin(queue), *_claim_sql(queue)]


def test_whether_a_queue_is_limited_is_read_once_a_refresh(monkeypatch):
    queue = JobQueue()
    name = _queue_of(queue, "cost_refresh")
    with statements() as sql:
        queue.dequeue(name, BATCH)
        queue.dequeue(name, BATCH)
    reads = [s for s in sql if "queues_queueconfig" in s]
    assert len(reads) == 1, sql
    monkeypatch.setattr(limits, "REFRESH", 0.0)
    with statements() as sql:
        queue.dequeue(name, BATCH)
    assert len([s for s in sql if "queues_queueconfig" in s]) == 1, sql


def test_a_limited_claim_locks_the_config_row_and_counts_before_the_same_claim():
    queue = JobQueue()
    name = _queue_of(queue, "cost_limited")
    queue.queue_config(name, max_running=3)
    queries = queue.store.queries
    with statements() as sql:
        assert len(queue.dequeue(name, BATCH)) == 3
    lock_and_count = [*_begin(queue), queries["lock_queue_limit"], queries["count_running"]]
    assert sql == [*lock_and_count, *_claim_sql(queue)]
    with statements() as sql:
        assert queue.dequeue(name, BATCH) == []
    assert sql == lock_and_count, "no claim at the limit"


def test_the_lock_is_a_row_lock_where_the_database_has_them(vendor):
    lock = JobQueue().store.queries["lock_queue_limit"]
    if vendor == "sqlite":  # the claim's IMMEDIATE transaction is the lock
        assert "FOR UPDATE" not in lock
    else:
        assert lock.rstrip().endswith("FOR UPDATE")
