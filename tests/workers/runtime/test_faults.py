"""Database faults in the middle of a worker's calls: logged, retried on a new connection,
no job lost or run twice."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import InterfaceError, OperationalError, connection

from queues.api import JobQueue
from tests.conftest import unique_queue
from tests.workers.support.helpers import (
    Runs,
    counting_handler,
    enqueue_jobs,
    running,
    wait_for_status,
    wait_until,
)
from workers.api import Worker
from workers.runtime.faults import GaveUp, retrying


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
        # Every start marker, check and outcome goes through this one call.
        "write_runs": 4,
        # The claimer's read of the queue's limits, before each claim.
        "is_limited": 3,
    }
    queue = FlakyQueue(failures)
    name = unique_queue("faults")
    ids = enqueue_jobs(queue, name, 20)
    runs = Runs()
    # Jobs long enough that held jobs wait past FRESH_START and get their start markers.
    worker = (
        Worker(queue, name, counting_handler(runs, 0.06))
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
    assert "database fault while reading the queue's limits" in caplog.text
    assert "database is back" in caplog.text


def _kill_other_connections() -> int:
    """End every other session on the test database, as a server restart would."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            return cursor.fetchone()[0]
        cursor.execute(
            "SELECT id FROM information_schema.processlist "
            "WHERE db = DATABASE() AND id <> CONNECTION_ID()"
        )
        ids = [row[0] for row in cursor.fetchall()]
        for pid in ids:
            try:
                cursor.execute(f"KILL {int(pid)}")
            except OperationalError:
                pass  # it ended by itself meanwhile
        return len(ids)


@pytest.mark.skipif(connection.vendor == "sqlite", reason="SQLite has no server sessions")
@pytest.mark.django_db(transaction=True)
def test_worker_carries_on_when_its_connections_are_killed(caplog):
    queue = JobQueue()
    name = unique_queue("killed")
    ids = enqueue_jobs(queue, name, 60)
    runs = Runs()
    worker = (
        Worker(queue, name, counting_handler(runs, 0.02))
        .with_poll_interval(timedelta(milliseconds=20))
        .with_batch_size(6)
        .with_batch_concurrency(3)
    )
    killed = 0
    with caplog.at_level("WARNING", logger="workers"), running(worker):
        for threshold in (10, 25, 40):
            wait_until(
                lambda t=threshold: queue.get_job_counts_by_status(name)["Completed"] >= t,
                60,
                "the worker stalled",
            )
            killed += _kill_other_connections()
        # Nothing waits for the reaper (the lease is the default five minutes): a claim or
        # an outcome whose connection died is written again, or found by its token.
        wait_for_status(queue, name, "Completed", 60, 60)
    assert killed > 0
    assert "database fault" in caplog.text
    counts, _ = runs.snapshot()
    assert set(counts) == set(ids)


@pytest.mark.django_db(transaction=True)
def test_a_claim_committed_before_its_connection_dropped_is_not_lost():
    class LostReply(JobQueue):
        """The first claim commits, then its reply is lost with the connection (inside
        `dequeue`, where a dropped connection raises)."""

        lost: list = []

        def _claim(self, *args):
            jobs = super()._claim(*args)
            if not self.lost and jobs:
                self.lost.extend(jobs)
                raise OperationalError("server closed the connection unexpectedly")
            return jobs

    queue = LostReply()
    name = unique_queue("lost_reply")
    ids = enqueue_jobs(queue, name, 4)
    runs = Runs()
    worker = Worker(queue, name, counting_handler(runs, 0), batch_size=4).with_poll_interval(
        timedelta(milliseconds=20)
    )
    with running(worker):
        wait_for_status(queue, name, "Completed", 4, 30)
    assert {job.id for job in queue.lost} == set(ids)
    counts, _ = runs.snapshot()
    assert counts == dict.fromkeys(ids, 1)
    assert all(queue.get_job(job_id).attempts == 1 for job_id in ids)
