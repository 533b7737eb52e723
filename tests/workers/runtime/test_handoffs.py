"""The hand-off between a slot and the writer: a `Latch` (one lock, no `Condition`) that the
writer sets once a request is written; a run's threads make no `Condition` per job."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest

from queues.api import Job, JobQueue, JobStatus
from tests.conftest import unique_queue
from workers.api import Worker
from workers.runtime.handoffs import Latch


def test_a_latch_lets_its_waiter_go_once_set_from_another_thread():
    latch = Latch()
    woke = []
    waiter = threading.Thread(target=lambda: woke.append(latch.wait(30)))
    waiter.start()
    assert not latch.is_set()
    latch.set()
    waiter.join(30)
    assert woke == [True] and latch.is_set()


def test_a_latch_not_set_times_out_and_set_twice_is_once():
    latch = Latch()
    assert latch.wait(0.01) is False
    latch.set()
    latch.set()  # the writer's early release, then its write: no error
    assert latch.wait() is True and latch.wait(0) is True  # again: still set


class CountingCondition(threading.Condition):
    """`threading.Condition`, counting those made by threads other than the test's."""

    made = 0
    test_thread: threading.Thread | None = None

    def __init__(self, *args, **kwargs):
        if threading.current_thread() is not CountingCondition.test_thread:
            CountingCondition.made += 1
        super().__init__(*args, **kwargs)


def conditions_of_a_run(monkeypatch, jobs: int) -> int:
    """The Conditions (each `threading.Event` makes one) that a burst run of `jobs` short
    jobs made in its threads."""
    queue = JobQueue()
    name = unique_queue("handoffs")
    queue.enqueue_many([Job(queue_name=name, payload={"i": i}) for i in range(jobs)])
    worker = (
        Worker(queue, name, lambda job: {"i": job.payload["i"]})
        .with_batch_size(20)
        .with_batch_concurrency(4)
        .with_poll_interval(timedelta(milliseconds=20))
        .with_burst()
    )
    CountingCondition.made, CountingCondition.test_thread = 0, threading.current_thread()
    with monkeypatch.context() as patched:
        patched.setattr(threading, "Condition", CountingCondition)
        runner = threading.Thread(target=worker.run, args=(threading.Event(),))
        runner.start()
        runner.join(120)
    assert not runner.is_alive(), "the burst run did not end"
    assert queue.get_job_counts_by_status(name).get(JobStatus.COMPLETED) == jobs
    return CountingCondition.made


@pytest.mark.django_db(transaction=True)
def test_a_slot_waits_on_no_condition_made_for_its_job(monkeypatch):
    """Ten times the jobs, the same threads' Conditions: none is made per job (a fresh
    `threading.Event` per request made one a job)."""
    few = conditions_of_a_run(monkeypatch, 20)
    many = conditions_of_a_run(monkeypatch, 200)
    assert many - few < 30, (few, many)
