"""Stores: what a claim takes and how it marks it."""

from __future__ import annotations

import uuid

from queues import enums
from queues.api import JobPriority, JobStatus
from queues.models import QueuePause
from queues.tasks.jobs import task_priorities
from tests.queues.conftest import unique_queue
from tests.queues.store.conftest import LEASE, T0, claim, insert, job, one


def _ineligible(store, name: str) -> list:
    """Jobs of `name` that no claim may take."""
    parent = job(name, age=100, priority=JobPriority.HIGH)
    insert(store, parent)
    return insert(
        store,
        job(name, age=-60, priority=JobPriority.CRITICAL),  # due later
        job(
            name,
            priority=JobPriority.CRITICAL,
            depends_on=[str(parent.id)],
            dependency_status=enums.DependencyStatus.WAITING,
        ),
        job(name, priority=JobPriority.CRITICAL, dependency_status=enums.DependencyStatus.FAILED),
        job(name, priority=JobPriority.CRITICAL, cron_schedule="* * * * *", recurring=False),
        job(name, priority=JobPriority.CRITICAL, status=JobStatus.DEAD, failed_at=T0),
        job(unique_queue("other"), priority=JobPriority.CRITICAL),
    ) + [parent.id]


def test_claimable_levels_are_those_with_a_claimable_job(store):
    name = unique_queue("levels")
    _ineligible(store, name)
    satisfied = enums.DependencyStatus.SATISFIED
    insert(store, job(name, priority=JobPriority.LOW, dependency_status=satisfied))
    insert(store, job(name, priority=JobPriority.LOW, cron_schedule="* * * * *", recurring=True))
    assert sorted(store.claimable_levels(name, T0)) == [JobPriority.LOW, JobPriority.HIGH]
    store.pause(QueuePause(queue_name=name, paused_at=T0))
    assert sorted(store.claimable_levels(name, T0)) == [JobPriority.LOW, JobPriority.HIGH]


def test_a_claim_takes_claimable_jobs_in_claim_order_and_marks_them(store):
    name = unique_queue("claim")
    parent_id = _ineligible(store, name)[-1]  # the HIGH parent, due 100 s ago
    low_old = job(name, age=50, priority=JobPriority.LOW)
    normal_new, normal_old = job(name, age=10), job(name, age=20)
    insert(store, low_old, normal_new, normal_old)
    token = uuid.uuid4()
    claimed = claim(store, name, limit=3, token=token)
    assert sorted(j.id for j in claimed) == sorted([parent_id, normal_old.id, normal_new.id])
    for claimed_job in [*claimed, *(one(store, j.id) for j in claimed)]:
        assert claimed_job.status == JobStatus.RUNNING and claimed_job.attempts == 1
        assert (claimed_job.started_at, claimed_job.last_heartbeat_at) == (T0, T0)
        assert (claimed_job.lease_expires_at, claimed_job.run_token) == (T0 + LEASE, token)
    assert [j.id for j in claim(store, name)] == [low_old.id]
    assert claim(store, name) == []


def test_a_claim_at_a_level_takes_only_that_level(store):
    name = unique_queue("claim_level")
    low, high = job(name, priority=JobPriority.LOW), job(name, priority=JobPriority.HIGH)
    insert(store, low, high)
    assert [j.id for j in claim(store, name, priority=JobPriority.LOW)] == [low.id]
    assert claim(store, name, priority=JobPriority.LOW) == []


def test_a_paused_queue_is_never_claimed_from(store):
    name = unique_queue("claim_paused")
    job_id = insert(store, job(name))[0]
    store.pause(QueuePause(queue_name=name, paused_at=T0))
    assert claim(store, name) == [] and claim(store, name, priority=JobPriority.NORMAL) == []
    store.resume(name)
    assert [j.id for j in claim(store, name)] == [job_id]


def test_a_claim_orders_a_level_by_task_priority_then_age(store):
    # Django tasks of one level (their own priorities -20..20 are all Normal) run in their
    # exact order, a larger one sooner; a queues.api job (task_priority 0) sits between the
    # positive and the negative ones; the level still comes first.
    name = unique_queue("claim_fine")
    jobs = {
        "task 30": job(name, **task_priorities(30)),  # High
        "api high": job(name, age=500, priority=JobPriority.HIGH),
        "task 10": job(name, **task_priorities(10)),
        "task 5": job(name, age=5, **task_priorities(5)),
        "task 2": job(name, age=300, **task_priorities(2)),
        "api normal, older": job(name, age=100),
        "api normal": job(name, age=50),
        "task -2": job(name, age=900, **task_priorities(-2)),
        "task -50": job(name, age=1000, **task_priorities(-50)),  # Low
    }
    insert(store, *reversed(jobs.values()))
    by_id = {j.id: label for label, j in jobs.items()}
    assert [by_id[claim(store, name, limit=1)[0].id] for _ in jobs] == list(jobs)


def test_a_claim_at_a_level_orders_it_by_task_priority_then_age(store):
    name = unique_queue("claim_fine_level")
    old, api, high = job(name, age=60), job(name, age=30), job(name, **task_priorities(20))
    low = job(name, age=600, **task_priorities(-20))
    insert(store, low, old, api, high)
    order = [claim(store, name, limit=1, priority=JobPriority.NORMAL)[0].id for _ in range(4)]
    assert order == [high.id, old.id, api.id, low.id]
