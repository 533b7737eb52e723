"""The conformance fixtures: each queue test runs on the database of this run (JobQueue) and
in memory (TestQueue), so the two are held to the same behaviour."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection

from queues.api import Job, JobPriority, JobQueue, MockClock, TestQueue
from tests.conftest import unique_queue

__all__ = ["aged_job", "unique_queue"]


def pytest_collection_modifyitems(items):
    # The database variant (of a queue or of a store) commits for real (threads and other
    # connections must see its rows), so it gets a transactional database; the memory
    # variant needs none.
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if params.get("queue") == "db" or params.get("store") == "sql":
            item.add_marker(pytest.mark.django_db(transaction=True))


@pytest.fixture(params=["db", "memory"])
def queue(request):
    """A queue with a clock the test can move (`queue.clock.advance(...)`)."""
    if request.param == "db":
        yield JobQueue(clock=MockClock())
        connection.close()
    else:
        yield TestQueue()


@pytest.fixture
def engine() -> JobQueue:
    """The database queue on the real clock, as the dashboard and the admin use it."""
    return JobQueue()


@pytest.fixture
def superuser_client(client):
    from django.contrib.auth.models import User

    client.force_login(User.objects.create_superuser("root", "root@example.com", None))
    return client


@pytest.fixture
def db_queue(transactional_db):
    yield JobQueue(clock=MockClock())
    connection.close()


def aged_job(queue_name: str, priority: JobPriority, age_secs: int, clock=None) -> Job:
    """A job due `age_secs` seconds ago, so claim order within a level is known."""
    job = Job(queue_name=queue_name, payload={"age": age_secs}, priority=priority)
    job.scheduled_at = job.created_at - timedelta(seconds=age_secs)
    return job
