"""The NOTIFY triggers that wake idle workers on PostgreSQL (`install_pickup_notify`): a
notification names the queue where a job may have become claimable, at COMMIT; the writes of
runs that make nothing claimable (claims, heartbeats, completions) send none.

Negative checks use a marker: an enqueue into a queue of its own, committed afterwards, whose
notification arrives after any earlier one would have (notifications are delivered in
commit order), so no test waits for something not to happen."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection, transaction

from queues.api import DequeueOptions, Job, JobOutcome, JobQueue, MockClock
from queues.models import Job as JobRow
from tests.conftest import unique_queue
from tests.pgbouncer.pooling import skip_through_a_pooler
from workers.runtime.pickup import NOTIFY, PickupListener

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="NOTIFY is PostgreSQL's"),
]

WAIT = 5.0  # far longer than delivery takes; the listener has no timer of its own


class Recorder:
    """Stands for the hub: records the queues notified, in order."""

    using = "default"

    def __init__(self) -> None:
        self.queues: list[str] = []
        self.changed = threading.Condition()

    def wake(self, queue_name, reason) -> None:
        assert reason == NOTIFY
        with self.changed:
            self.queues.append(queue_name)
            self.changed.notify_all()

    def until(self, queue_name: str) -> list[str]:
        """Wait for a notification of `queue_name`; every queue notified until then (taken)."""
        with self.changed:
            assert self.changed.wait_for(lambda: queue_name in self.queues, WAIT), self.queues
            queues, self.queues = self.queues, []
            return queues

    def marker(self) -> list[str]:
        """Commit a marker on a connection of its own and wait for it (see the docstring)."""
        name = unique_queue("marker")

        def run():
            try:
                JobQueue().enqueue(Job(queue_name=name, payload={}))
            finally:
                connection.close()

        thread = threading.Thread(target=run)
        thread.start()
        thread.join()
        queues = self.until(name)
        return [q for q in queues if q != name]


@pytest.fixture
def notified():
    skip_through_a_pooler()
    recorder = Recorder()
    listener = PickupListener(recorder)
    listener.start()
    assert listener.listening.wait(WAIT)
    yield recorder
    listener.stop()
    listener.join(WAIT)


def test_an_enqueue_notifies_its_queue_at_commit_once(notified):
    queue = unique_queue("pickup")
    with transaction.atomic():
        JobQueue().enqueue_many([Job(queue_name=queue, payload={}) for _ in range(5)])
        assert notified.marker() == []  # not before the commit
    assert notified.until(queue) == [queue]  # one for the five
    assert notified.marker() == []


def test_a_rolled_back_enqueue_notifies_nobody(notified):
    class Rollback(Exception):
        pass

    with pytest.raises(Rollback), transaction.atomic():
        JobQueue().enqueue(Job(queue_name=unique_queue("pickup"), payload={}))
        raise Rollback
    assert notified.marker() == []


def test_claims_heartbeats_and_completions_notify_nobody(notified):
    engine, queue = JobQueue(), unique_queue("pickup")
    engine.enqueue(Job(queue_name=queue, payload={}))
    notified.until(queue)
    notified.marker()
    [job] = engine.dequeue(queue)
    assert engine.heartbeat_job(job, timedelta(minutes=5))
    JobRow.objects.filter(queue_name=queue).update(last_heartbeat_at=None)
    engine.finish_job_run(job, JobOutcome.completed({"ok": True}))
    assert notified.marker() == []


def test_a_retry_a_release_and_a_resume_notify_the_queue(notified):
    engine, queue = JobQueue(), unique_queue("pickup")
    engine.enqueue(Job(queue_name=queue, payload={}, max_attempts=5))
    notified.marker()
    [job] = engine.dequeue(queue)
    engine.finish_job_run(job, JobOutcome.failed("boom"))  # retried later: Pending again
    assert notified.marker() == [queue]
    engine.retry_job(job.id)  # an operator's retry: now
    assert notified.marker() == [queue]
    [job] = engine.dequeue(queue)
    assert engine.release_job_run(job)
    assert notified.marker() == [queue]
    engine.pause_queue(queue)
    assert notified.marker() == []
    engine.resume_queue(queue)
    assert notified.marker() == [queue]


def test_a_released_dependent_notifies_its_queue(notified):
    engine = JobQueue()
    parents, children = unique_queue("parent"), unique_queue("child")
    parent = Job(queue_name=parents, payload={})
    child = Job(queue_name=children, payload={}, depends_on=[parent.id])
    engine.enqueue(parent)
    engine.enqueue(child)  # waits for its parent: notified, but not claimable
    notified.marker()
    [run] = engine.dequeue(parents)
    engine.finish_job_run(run, JobOutcome.completed())
    assert notified.marker() == [children]


def test_a_reaped_job_notifies_its_queue(notified):
    clock = MockClock()
    engine, queue = JobQueue(clock=clock), unique_queue("pickup")
    engine.enqueue(Job(queue_name=queue, payload={}, max_attempts=3))
    [job] = engine.dequeue(queue, DequeueOptions(lease_duration=timedelta(seconds=30)))
    notified.marker()
    clock.advance(timedelta(minutes=1))
    assert engine.requeue_stale_jobs(queue).requeued == [job.id]
    assert notified.marker() == [queue]
