"""`StartChecks`: the slots' reads of whether their next held jobs may start, shared. An ask
is answered only by a read that began after it (a take-back committed before a slot asks is
seen), and the asks that come while a read is in flight share the next one. Real threads,
each on its own connection, on the real database."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import OperationalError, connection
from django.utils import timezone

from queues.api import DequeueOptions, JobQueue, JobStatus
from tests.conftest import unique_queue
from tests.workers.support.helpers import enqueue_jobs, wait_until
from workers.runtime.start_checks import StartChecks

pytestmark = pytest.mark.django_db(transaction=True)


class GatedQueue:
    """The real `may_start`, each read recorded, and held (after it read) until `gate`."""

    def __init__(self, queue: JobQueue) -> None:
        self.queue = queue
        self.reads: list[set] = []
        self.gate = threading.Event()
        self.fail = False

    def may_start(self, jobs):
        self.reads.append({job.id for job in jobs})
        try:
            if self.fail:
                raise OperationalError("the server went away")
            return self.queue.may_start(jobs)
        finally:
            self.gate.wait(30)
            connection.close()  # each asking thread's own connection, closed as a slot's is


def claimed(n: int):
    queue = JobQueue()
    name = unique_queue("start_checks")
    enqueue_jobs(queue, name, n)
    jobs = queue.dequeue(name, DequeueOptions(batch_size=n, lease_duration=timedelta(minutes=5)))
    assert len(jobs) == n
    return queue, name, jobs


def ask(checks: StartChecks, job, answers: dict) -> threading.Thread:
    thread = threading.Thread(target=lambda: answers.update({job.id: checks.may_start(job)}))
    thread.start()
    return thread


def test_an_ask_is_answered_by_a_read_that_began_after_it():
    queue, _, (first, taken, later) = claimed(3)
    gated = GatedQueue(queue)
    checks = StartChecks(gated)
    answers: dict = {}
    leader = ask(checks, first, answers)
    wait_until(lambda: gated.reads, 10, "the first ask did not read")
    # While that read is held, an operator takes a job back, and then its slot asks: the
    # read in flight began before, so it must not answer; the next read sees the take-back.
    queue.retry_job(taken.id, timezone.now())
    followers = [ask(checks, taken, answers), ask(checks, later, answers)]
    wait_until(lambda: len(checks.waiting) == 2, 10, "the asks did not wait for the read")
    gated.gate.set()
    for thread in [leader, *followers]:
        thread.join(30)
    assert answers == {first.id: True, taken.id: False, later.id: True}
    assert gated.reads == [{first.id}, {taken.id, later.id}], "two asks, one read"
    assert queue.get_job(taken.id).status == JobStatus.PENDING


def test_a_paused_queue_and_a_failed_read_answer_no():
    queue, name, (a, b) = claimed(2)
    gated = GatedQueue(queue)
    gated.gate.set()
    checks = StartChecks(gated)
    gated.fail = True
    assert checks.may_start(a) is False, "a failed read: the start marker decides"
    gated.fail = False
    assert checks.may_start(a) is True, "the next ask reads again"
    queue.pause_queue(name)
    assert checks.may_start(b) is False
    assert len(gated.reads) == 3
    stored = queue.get_job(b.id)
    assert (stored.status, stored.started_at) == (JobStatus.RUNNING, b.started_at), "a read"


class SteppedQueue(GatedQueue):
    """Each read held (after it read) until the test lets that one read go."""

    def __init__(self, queue: JobQueue) -> None:
        super().__init__(queue)
        self.steps = threading.Semaphore(0)
        self.gate = self  # GatedQueue.may_start waits on `gate.wait`

    def wait(self, timeout):
        return self.steps.acquire(timeout=timeout)


def test_the_asks_that_come_during_a_read_are_the_next_reads_round_after_round():
    queue, _, (a, b, c, d, e) = claimed(5)
    stepped = SteppedQueue(queue)
    checks = StartChecks(stepped)
    answers: dict = {}
    threads = [ask(checks, a, answers)]
    wait_until(lambda: len(stepped.reads) == 1, 10, "the first ask did not read")
    threads += [ask(checks, b, answers), ask(checks, c, answers)]
    wait_until(lambda: len(checks.waiting) == 2, 10, "the second round did not gather")
    stepped.steps.release()  # the first read ends: the second round's first ask reads
    wait_until(lambda: len(stepped.reads) == 2 and a.id in answers, 10,
               "the second round did not read")  # fmt: skip
    assert answers == {a.id: True}, "an ask of the second round was answered by the first read"
    threads += [ask(checks, d, answers), ask(checks, e, answers)]
    wait_until(lambda: len(checks.waiting) == 2, 10, "the third round did not gather")
    stepped.steps.release()
    wait_until(lambda: len(stepped.reads) == 3, 10, "the third round did not read")
    stepped.steps.release()
    for thread in threads:
        thread.join(30)
    assert stepped.reads == [{a.id}, {b.id, c.id}, {d.id, e.id}], "one read a round"
    assert answers == {job.id: True for job in (a, b, c, d, e)}
