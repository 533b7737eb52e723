"""The start checks of held jobs, carried by the writer's writes (`JobQueue.write_runs`): a
slot that hands in an outcome and takes a held job within the claim's start window gets its
answer from a write that began after it asked (a take-back committed before the ask is
seen), and the asks of every slot waiting at the time share that one write. Real threads, the
writer on its own connection, on the real database."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import OperationalError

from queues.api import DequeueOptions, JobOutcome, JobQueue, JobStatus
from queues.models import QueuePause
from tests.conftest import unique_queue
from tests.workers.support.helpers import enqueue_jobs, wait_until
from workers.runtime import handoffs
from workers.runtime.allowance import Allowance
from workers.runtime.hub import ProcessHub

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def recent(monkeypatch):
    """Every held job is "just claimed" (a loaded machine must not turn checks into start
    markers)."""
    monkeypatch.setattr(handoffs, "FRESH_START", 600.0)


class GatedQueue:
    """The real `write_runs`, each call's checks recorded, held (after it wrote) until `gate`."""

    def __init__(self, queue: JobQueue) -> None:
        self.queue = queue
        self.using = queue.using
        self.writes: list[set] = []
        self.gate = threading.Event()
        self.fail = False

    def write_runs(self, finished, starting, checking, answered=None, on_checked=None):
        self.writes.append({job.id for job in checking})
        try:
            if self.fail:
                raise OperationalError("the server went away")
            return self.queue.write_runs(finished, starting, checking, answered, on_checked)
        finally:
            self.gate.wait(30)

    def finish_and_start_runs(self, finished, starting):
        return self.queue.finish_and_start_runs(finished, starting)


class Run:
    """A worker run's state and its writer thread (no slots: the test is the slots)."""

    def __init__(self, queue, jobs) -> None:
        self.force = threading.Event()
        self.hub = ProcessHub(queue, timedelta(minutes=5), None, threading.Event(), self.force)
        self.state = self.hub.new_state(_Stats(), concurrency=4, unwritten_limit=10)
        self.state.hold(jobs)
        self.hub.join(self.state, Allowance(None, []))
        self.thread = threading.Thread(target=self.hub.writer.run, daemon=True)
        self.thread.start()

    def hand_in(self, job, answers: dict) -> threading.Thread:
        """A slot's hand-in of `job`'s completion, taking the next held job to check."""

        def slot():
            request = self.state.submit(
                finished=(job, JobOutcome.completed()), wait=False, check_next=True
            )
            check = request.check
            answers[job.id] = (check, check is not None and check.id in request.startable)

        thread = threading.Thread(target=slot)
        thread.start()
        return thread

    def end(self) -> None:
        self.state.set_stopping()
        self.hub.close()
        self.thread.join(10)


class _Stats:
    def add(self, **counts) -> None:
        pass


def claimed(n: int):
    queue = JobQueue()
    name = unique_queue("checked_writes")
    enqueue_jobs(queue, name, n)
    jobs = queue.dequeue(name, DequeueOptions(batch_size=n, lease_duration=timedelta(minutes=5)))
    assert len(jobs) == n
    return queue, name, jobs


def test_a_check_is_answered_by_a_write_that_began_after_it():
    queue, _, jobs = claimed(6)
    running, held = jobs[:3], jobs[3:]
    gated = GatedQueue(queue)
    run = Run(gated, held)
    for job in running:  # the slots' own jobs: taken, so that the run knows them
        run.state.running[id(job)] = job
    answers: dict = {}
    first = run.hand_in(running[0], answers)
    wait_until(lambda: len(gated.writes) == 1, 10, "the first write did not begin")
    # While the first write is in flight, an operator takes back a held job; then two slots
    # ask: their checks must be the next write's, which sees the take-back.
    queue.cancel_job(held[2].id)
    followers = [run.hand_in(job, answers) for job in running[1:]]
    wait_until(lambda: len(run.state.outbox) == 2, 10, "the asks did not wait for the write")
    gated.gate.set()
    for thread in [first, *followers]:
        thread.join(10)
    run.end()
    assert gated.writes == [{held[0].id}, {held[1].id, held[2].id}], "one write for both asks"
    checked = {check.id: startable for check, startable in answers.values()}
    assert checked == {held[0].id: True, held[1].id: True, held[2].id: False}
    assert queue.get_job(held[2].id).status != JobStatus.RUNNING, "taken back"
    assert all(queue.get_job(job.id).status == JobStatus.COMPLETED for job in running)


def test_a_paused_queue_and_a_failed_write_answer_no():
    queue, name, jobs = claimed(4)
    running, held = jobs[:2], jobs[2:]
    gated = GatedQueue(queue)
    gated.gate.set()
    gated.fail = True
    run = Run(gated, held)
    for job in running:
        run.state.running[id(job)] = job
    run.force.set()  # a forced stop: the failed write is not retried
    answers: dict = {}
    run.hand_in(running[0], answers).join(10)
    assert answers[running[0].id] == (held[0], False), "a failed write: the start marker decides"
    run.force.clear()
    gated.fail = False
    queue.store.pause(QueuePause(queue_name=name, paused_at=queue.now()))
    run.hand_in(running[1], answers).join(10)
    run.end()
    assert answers[running[1].id] == (held[1], False), "its queue is paused"
