"""Where sync handlers with a timeout run: one thread for every such job of a slot, not the
slot's own, and a new one after a handler outlives its timeout."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.contrib.auth.models import User

from queues.api import Job, JobQueue
from tests.conftest import unique_queue
from tests.workers.support.helpers import running, wait_for_status
from workers.api import Worker
from workers.runtime.handler_thread import HandlerThreads

pytestmark = pytest.mark.django_db(transaction=True)
FAST = timedelta(milliseconds=20)

#: Each thread's first job: a job that finds another's id here ran in that job's thread.
_first = threading.local()


def first_job_of_this_thread(job) -> dict:
    """A user's handler: reads the database and returns what it saw, and the first job this
    thread ran."""
    if not hasattr(_first, "job"):
        _first.job = str(job.id)
    return {"users": User.objects.count(), "first": _first.job, "thread": _thread_name()}


def _thread_name() -> str:
    return threading.current_thread().name


def test_a_slots_timed_jobs_share_one_thread_that_is_not_the_slots():
    queue = JobQueue()
    name = unique_queue("handler_thread")
    untimed = queue.enqueue(Job(queue_name=name, priority=4))  # claimed first: highest level
    timed = [queue.enqueue(Job(queue_name=name, timeout=timedelta(seconds=30))) for _ in range(4)]
    worker = Worker(queue, name, first_job_of_this_thread, poll_interval=FAST, batch_concurrency=1)
    with running(worker):
        wait_for_status(queue, name, "Completed", 5, 30)
    results = {job_id: queue.get_job(job_id).result for job_id in [untimed, *timed]}
    assert results[untimed]["first"] == str(untimed), "the untimed job ran in the slot"
    firsts = {results[job_id]["first"] for job_id in timed}
    assert len(firsts) == 1, f"the slot's timed jobs ran in {len(firsts)} threads"
    assert firsts != {str(untimed)}, "a timed job ran in the slot's own thread"
    for job_id in timed:  # the thread is named for the job it runs
        assert results[job_id]["thread"] == f"job-{job_id}"
        assert results[job_id]["users"] == 0


def test_after_a_timeout_the_slots_next_timed_job_gets_a_new_thread():
    queue = JobQueue()
    name = unique_queue("handler_thread_timeout")
    release = threading.Event()
    stuck = queue.enqueue(
        Job(queue_name=name, priority=4, max_attempts=1, timeout=timedelta(milliseconds=200))
    )
    after = queue.enqueue(Job(queue_name=name, timeout=timedelta(seconds=30)))

    def handler(job):
        result = first_job_of_this_thread(job)
        if job.id == stuck:
            release.wait(30)  # past its timeout: its thread is left to it
        return result

    worker = Worker(
        queue,
        name,
        handler,
        poll_interval=FAST,
        batch_concurrency=1,
        shutdown_grace_period=timedelta(seconds=20),
    )
    try:
        with running(worker):
            wait_for_status(queue, name, "TimedOut", 1, 30)
            release.set()  # back within the grace period: the slot goes on
            wait_for_status(queue, name, "Completed", 1, 30)
    finally:
        release.set()
    assert queue.get_job(stuck).result is None  # its outcome is the timeout, not its value
    result = queue.get_job(after).result
    assert result["first"] == str(after), "the next timed job ran in the timed-out thread"
    assert result["thread"] == f"job-{after}"


def test_a_call_whose_wait_fails_leaves_its_answer_to_no_other_call():
    threads = HandlerThreads()
    release = threading.Event()

    def answer(value):
        release.wait(5)
        return value

    try:
        with pytest.raises(OverflowError):  # a wait longer than the clock can count
            threads.call("job-a", 1e300, answer, "a")
        release.set()
        assert threads.call("job-b", 5, answer, "b") == "b"
    finally:
        release.set()
        threads.close()


def test_a_workers_default_timeout_is_at_most_a_jobs_longest():
    with pytest.raises(ValueError, match="default_timeout must be at most 365 days"):
        Worker(JobQueue(), "q", lambda job: None, default_timeout=timedelta(days=366))
