"""A claim whose reply is lost (the connection drops once the claim has committed) is found by
its retry: `dequeue(..., run_token=token)` after a call with that token raised returns the
claim's jobs still Running instead of claiming more. A first claim pays nothing for it.

The faults are real: on a database the claim statement runs, then the connection is closed
once the claim commits (at once in autocommit, else right after COMMIT) and the call gets the
error a dropped connection gives; in memory the store's transaction commits, then raises."""

from __future__ import annotations

import uuid
from contextlib import contextmanager

import pytest
from django.db import OperationalError, connection, transaction

import queues.engine.queue
from queues.api import DequeueOptions, JobPriority, JobStatus, PriorityWeights, TestQueue
from tests.queues.conftest import aged_job, unique_queue
from tests.queues.support.recording import Recording

STRICT = DequeueOptions.batch(3)
WEIGHTED = STRICT.with_priority_weights(PriorityWeights())
DROPPED = "server closed the connection unexpectedly"


class Fault:
    fired = False


@contextmanager
def claim_fault(queue, when: str):
    """The next claim fails as a dropped connection: `after` its claim committed (its reply
    is lost), or `before` the claim statement reached the database (nothing committed)."""
    fault = Fault()
    if isinstance(queue, TestQueue):
        with _memory_fault(queue.store, when, fault):
            yield fault
    else:
        with _database_fault(queue.store, when, fault):
            yield fault


def _drop():
    connection.close()
    raise OperationalError(DROPPED)


@contextmanager
def _database_fault(store, when: str, fault: Fault):
    claims = {store.queries["claim_batch"], store.queries["claim_batch_at_level"]}

    def lose_after_commit():
        fault.fired = True
        _drop()

    def wrapper(execute, sql, params, many, context):
        if fault.fired or sql not in claims:
            return execute(sql, params, many, context)
        if when == "before":
            fault.fired = True
            _drop()
        result = execute(sql, params, many, context)
        # In autocommit (a strict claim on PostgreSQL) this runs at once: the statement has
        # committed. Inside the claim's transaction it runs right after its COMMIT.
        transaction.on_commit(lose_after_commit, using=store.using)
        return result

    with connection.execute_wrapper(wrapper):
        yield


@contextmanager
def _memory_fault(store, when: str, fault: Fault):
    real_claim, real_atomic = store.claim, store.atomic
    claimed = []

    def claim(params):
        if when == "before" and not fault.fired:
            fault.fired = True
            raise OperationalError(DROPPED)
        claimed.append(params.token)
        return real_claim(params)

    def atomic(fn, **kwargs):
        result = real_atomic(fn, **kwargs)
        if when == "after" and claimed and not fault.fired:
            fault.fired = True  # committed: the store's lock is released, its writes kept
            raise OperationalError(DROPPED)
        return result

    store.claim, store.atomic = claim, atomic
    try:
        yield
    finally:
        del store.claim, store.atomic


def _enqueue(queue, name: str, n: int) -> list:
    """`n` jobs due one second apart, oldest first (the claim order)."""
    return queue.enqueue_many(aged_job(name, JobPriority.NORMAL, 60 - i) for i in range(n))


def _running(queue, name: str) -> int:
    return queue.get_job_counts_by_status(name)["Running"]


@pytest.mark.parametrize("options", [STRICT, WEIGHTED], ids=["strict", "weighted"])
def test_the_retry_of_a_claim_whose_reply_was_lost_finds_its_jobs(queue, options):
    name = unique_queue("lost_reply")
    ids = _enqueue(queue, name, 5)
    token = uuid.uuid4()
    with claim_fault(queue, "after") as fault, pytest.raises(OperationalError):
        queue.dequeue(name, options, run_token=token)
    assert fault.fired
    assert _running(queue, name) == 3, "the claim was not committed"

    found = queue.dequeue(name, options, run_token=token)
    assert [job.id for job in found] == ids[:3]
    assert {(job.status, job.run_token, job.attempts) for job in found} == {
        (JobStatus.RUNNING, token, 1)
    }
    assert _running(queue, name) == 3, "the retry claimed more"
    # Found once: the token's next call is a claim again.
    assert [job.id for job in queue.dequeue(name, options, run_token=token)] == ids[3:]


def test_the_retry_of_a_claim_that_never_reached_the_store_claims(queue):
    name = unique_queue("lost_claim")
    ids = _enqueue(queue, name, 5)
    token = uuid.uuid4()
    with claim_fault(queue, "before") as fault, pytest.raises(OperationalError):
        queue.dequeue(name, STRICT, run_token=token)
    assert fault.fired and _running(queue, name) == 0

    claimed = queue.dequeue(name, STRICT, run_token=token)
    assert [job.id for job in claimed] == ids[:3]
    assert all(job.run_token == token and job.attempts == 1 for job in claimed)
    assert _running(queue, name) == 3


def _cost(queue, name: str, **kwargs) -> tuple[list[str], int]:
    """The store operations and the statements of one claim."""
    store = queue.store
    statements = []
    queue._store = recording = Recording(store)
    try:
        if isinstance(queue, TestQueue):
            assert len(queue.dequeue(name, STRICT, **kwargs)) == 3
        else:
            def count(execute, sql, *args):
                statements.append(sql)
                return execute(sql, *args)

            with connection.execute_wrapper(count):
                assert len(queue.dequeue(name, STRICT, **kwargs)) == 3
    finally:
        queue._store = store
    return recording.calls, len(statements)


def test_a_first_claim_with_a_token_costs_what_a_claim_without_one_costs(queue):
    name = unique_queue("token_cost")
    _enqueue(queue, name, 9)
    queue.dequeue(name, STRICT)  # a queue's first claim reads whether it has a limit
    plain = _cost(queue, name)
    with_token = _cost(queue, name, run_token=uuid.uuid4())
    assert with_token == plain
    assert plain[0] == ["atomic", "claim"]


def test_only_the_latest_unsure_claims_are_remembered(queue, monkeypatch):
    monkeypatch.setattr(queues.engine.queue, "UNSURE_CLAIMS", 2)
    name = unique_queue("unsure")
    ids = _enqueue(queue, name, 5)
    options = STRICT.with_batch_size(1)
    tokens = [uuid.uuid4() for _ in range(3)]
    for token in tokens:
        with claim_fault(queue, "after"), pytest.raises(OperationalError):
            queue.dequeue(name, options, run_token=token)
    assert _running(queue, name) == 3
    # The oldest is forgotten: its retry claims a new job; the latest is found.
    assert [job.id for job in queue.dequeue(name, options, run_token=tokens[0])] == [ids[3]]
    assert [job.id for job in queue.dequeue(name, options, run_token=tokens[2])] == [ids[2]]
