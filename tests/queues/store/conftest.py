"""The conformance suite of the stores (after River's driver suite): each contract of the
`Store` protocol (`queues/store/base.py`), exercised with store operations only, on the SQL
store of this run's database and on the memory store, so that a store that passes gives
`TestQueue` the database's behaviour. Here: the `store` fixture and the helpers; the tests
go by section of the protocol (transactions, claims, runs, rows, selections, upkeep)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection

from queues.models import Job
from queues.store import ClaimParams, Match, sql_store
from queues.store.memory.store import MemoryStore

T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
LEASE = timedelta(seconds=30)


@pytest.fixture(params=["sql", "memory"])
def store(request):
    # The sql variant has a transactional database (see conftest).
    if request.param == "memory":
        yield MemoryStore()
        return
    yield sql_store("default")
    connection.close()


def job(queue: str, age: int = 0, **fields) -> Job:
    """A new job as the queue hands it to the store: Pending, due `age` seconds before T0."""
    fields.setdefault("created_at", T0)
    fields.setdefault("scheduled_at", T0 - timedelta(seconds=age))
    return Job(queue_name=queue, **fields)


def insert(store, *jobs: Job) -> list:
    store.insert_jobs(list(jobs))
    return [j.id for j in jobs]


def claim(store, queue: str, limit: int = 10, token=None, now=T0, priority=None) -> list[Job]:
    params = ClaimParams(
        queue=queue,
        limit=limit,
        now=now,
        lease_expires_at=now + LEASE,
        token=token or uuid.uuid4(),
        priority=priority,
    )
    return store.atomic(lambda: store.claim(params))


def one(store, job_id) -> Job | None:
    found = store.find_jobs(Match(ids=[job_id]))
    return found[0] if found else None
