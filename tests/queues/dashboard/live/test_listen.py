"""The LISTEN thread on PostgreSQL: woken at COMMIT of a state change, not before it, not by a
rolled-back one, nor by a heartbeat (an UPDATE that leaves the status alone).

Negative checks use a marker: another committed change, whose notification arrives after any
earlier one would have (notifications are delivered in commit order), so no test waits for
something not to happen."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction

from queues.api import Job, JobQueue
from queues.models import Job as JobRow
from queues.store.listen import Listener
from tests.conftest import unique_queue
from tests.pgbouncer.pooling import skip_through_a_pooler

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="NOTIFY is PostgreSQL's"),
]

#: Far longer than delivery takes (about a millisecond); the listener has no timer of its own,
#: so a wake-up can only come from a NOTIFY.
WAIT = 5.0


class Wakes:
    def __init__(self) -> None:
        self.count = 0
        self.changed = threading.Condition()

    def __call__(self) -> None:
        with self.changed:
            self.count += 1
            self.changed.notify_all()

    def reach(self, n: int) -> int:
        """Wait until at least `n` wake-ups came; the count then."""
        with self.changed:
            assert self.changed.wait_for(lambda: self.count >= n, WAIT), self.count
            return self.count


@pytest.fixture
def wakes():
    skip_through_a_pooler()
    wakes = Wakes()
    listener = Listener(wakes)
    listener.start()
    assert listener.listening.wait(WAIT)
    yield wakes
    listener.stop()
    listener.join(WAIT)


def _marker() -> None:
    """A committed state change on a connection of its own."""

    def run():
        try:
            JobQueue().enqueue(Job(queue_name=unique_queue("marker"), payload={}))
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()


def test_a_committed_state_change_wakes_the_listener(wakes):
    engine, queue = JobQueue(), unique_queue("notify")
    job = Job(queue_name=queue, payload={})
    engine.enqueue(job)
    assert wakes.reach(1) == 1
    engine.mark_job_dead(job.id, "boom")
    assert wakes.reach(2) == 2


def test_nothing_wakes_it_before_commit_nor_after_a_rollback(wakes):
    class Rollback(Exception):
        pass

    with pytest.raises(Rollback), transaction.atomic():
        JobQueue().enqueue(Job(queue_name=unique_queue("notify"), payload={}))
        _marker()
        assert wakes.reach(1) == 1  # the marker only: ours is not committed
        raise Rollback
    _marker()
    assert wakes.reach(2) == 2  # the second marker only: ours was rolled back


def test_a_heartbeat_does_not_wake_it(wakes):
    engine, queue = JobQueue(), unique_queue("notify")
    engine.enqueue(Job(queue_name=queue, payload={}))
    assert wakes.reach(1) == 1
    JobRow.objects.filter(queue_name=queue).update(last_heartbeat_at=None)
    _marker()
    assert wakes.reach(2) == 2  # the marker only
