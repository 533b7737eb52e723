"""Database faults in the middle of a worker's calls: logged, retried on a new connection,
no job lost or run twice."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import InterfaceError, OperationalError

from queues.api import JobQueue
from tests.conftest import unique_queue
from workers.api import Worker
from workers.faults import GaveUp, retrying

from .helpers import Runs, counting_handler, enqueue_jobs, running, wait_for_status


class FlakyQueue(JobQueue):
    """Fails the first calls of some methods as a dropped connection would."""

    def __init__(self, failures: dict[str, int], **kwargs) -> None:
        super().__init__(**kwargs)
        self.failures = dict(failures)
        self.lock = threading.Lock()
        for name in failures:
            setattr(self, name, self._flaky(name, getattr(self, name)))

    def _flaky(self, name, method):
        def call(*args, **kwargs):
            with self.lock:
                fail = self.failures[name] > 0
                self.failures[name] -= 1
            if fail:
                error = OperationalError if self.failures[name] % 2 else InterfaceError
                raise error("server closed the connection unexpectedly")
            return method(*args, **kwargs)

        return call


def test_retrying_retries_connection_faults_only():
    calls = []

    def flaky():
        calls.append(1)
        if len(calls) < 3:
            raise OperationalError("gone")
        return "ok"

    assert retrying(flaky, what="testing") == "ok"
    assert len(calls) == 3
    with pytest.raises(ValueError):
        retrying(lambda: (_ for _ in ()).throw(ValueError("bug")), what="testing")


def test_retrying_gives_up_when_told():
    give_up = threading.Event()
    give_up.set()

    def down():
        raise OperationalError("connection refused")

    with pytest.raises(GaveUp):
        retrying(down, what="testing", give_up=give_up)


@pytest.mark.django_db(transaction=True)
def test_worker_carries_on_through_database_faults(caplog):
    failures = {
        "dequeue": 3,
        "start_claimed_run": 2,
        "finish_job_run": 2,
    }
    queue = FlakyQueue(failures)
    name = unique_queue("faults")
    ids = enqueue_jobs(queue, name, 20)
    runs = Runs()
    worker = (
        Worker(queue, name, counting_handler(runs, 0.01))
        .with_poll_interval(timedelta(milliseconds=20))
        .with_batch_size(5)
        .with_batch_concurrency(2)
    )
    with caplog.at_level("WARNING", logger="workers"), running(worker):
        wait_for_status(queue, name, "Completed", 20, 60)
    counts, _ = runs.snapshot()
    assert set(counts) == set(ids)
    assert all(n == 1 for n in counts.values())
    assert all(n <= 0 for n in queue.failures.values()), f"faults not all hit: {queue.failures}"
    assert "database fault while claiming jobs" in caplog.text
    assert "database is back" in caplog.text
