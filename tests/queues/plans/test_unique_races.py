"""Unique keys under real concurrency: threads with a connection each, released at once by a
barrier, enqueue the same keys; the database's unique index lets exactly one job in."""

from __future__ import annotations

import random
import threading
import time

import pytest
from django.db import DatabaseError, transaction

from queues.api import Job, JobOutcome, JobQueue
from queues.models import Job as JobRow
from tests.queues.conftest import unique_queue
from tests.queues.engine.test_concurrency import in_threads

pytestmark = pytest.mark.django_db(transaction=True)
THREADS = 8


def _enqueue_from_threads(name: str, keys: list[str], in_transaction: bool = False) -> list:
    """Each thread enqueues one job per key (in an order of its own), in a transaction of
    its own if asked; all their answers."""
    answers: list = []
    lock = threading.Lock()

    def enqueue(seed: int) -> None:
        order = keys[:]
        random.Random(seed).shuffle(order)
        queue = JobQueue()
        jobs = [Job(queue_name=name, payload={"key": k}, unique_key=k) for k in order]
        if in_transaction:
            results = _in_callers_transaction(queue, jobs, name, seed)
        else:
            results = queue.enqueue_many_unique(jobs)
        with lock:
            answers.extend(zip(order, results, strict=True))

    in_threads([lambda seed=seed: enqueue(seed) for seed in range(THREADS)])
    return answers


def _in_callers_transaction(queue: JobQueue, jobs: list[Job], name: str, seed: int) -> list:
    """The keyed jobs and a plain one in a transaction of the caller's, retried as a caller
    retries a transaction on MariaDB: two InnoDB transactions that insert into one unique
    index can deadlock (a loser's failed insert holds a shared lock on the key, which the
    winner's next insert into that index may wait behind), and one of them is told so.
    On SQLite (these settings leave Django's deferred BEGIN) a transaction that read before
    it writes cannot wait for the write lock once another connection wrote: "database is
    locked" at once, whatever the busy timeout. Hammerweb retries its own transactions;
    inside yours, the retry is yours, with a backoff so that the losers do not meet again."""
    backoff = random.Random(seed)
    for attempt in range(10):
        try:
            with transaction.atomic():
                results = queue.enqueue_many_unique(jobs)
                queue.enqueue(Job(queue_name=name, payload={"after": seed}))
            return results
        except DatabaseError as exc:
            if not queue.store.is_retryable(exc):
                raise
            time.sleep(backoff.uniform(0, 0.01 * 2**attempt))
    raise AssertionError("ten deadlocks in a row")


def test_eight_threads_enqueueing_one_key_make_one_row():
    for _ in range(5):
        name = unique_queue("race_unique")
        answers = _enqueue_from_threads(name, ["invoice:42"])
        created = [result for _, result in answers if result.created]
        assert len(created) == 1, answers
        assert {result.id for _, result in answers} == {created[0].id}
        assert JobRow.objects.filter(queue_name=name).count() == 1


def test_eight_threads_replacing_a_finished_holder_make_one_row():
    for _ in range(3):
        name = unique_queue("race_unique_stale")
        queue = JobQueue()
        old = queue.enqueue(Job(queue_name=name, unique_key="k"))
        queue.finish_job_run(queue.dequeue_one(name), JobOutcome.completed())
        answers = _enqueue_from_threads(name, ["k"])
        created = [result for _, result in answers if result.created]
        assert len(created) == 1, answers
        assert {result.id for _, result in answers} == {created[0].id} and old != created[0].id
        assert JobRow.objects.filter(queue_name=name).count() == 2
        assert JobRow.objects.filter(queue_name=name, unique_slot__isnull=False).count() == 1


def test_threads_enqueueing_many_keys_in_their_own_orders_make_one_row_per_key():
    name = unique_queue("race_unique_many")
    keys = [f"user:{i}" for i in range(12)]
    answers = _enqueue_from_threads(name, keys)
    assert len(answers) == THREADS * len(keys)
    for key in keys:
        mine = [result for k, result in answers if k == key]
        assert sum(result.created for result in mine) == 1, key
        assert len({result.id for result in mine}) == 1, key
    assert JobRow.objects.filter(queue_name=name).count() == len(keys)


def test_enqueues_inside_the_callers_transactions_make_one_row():
    # A lost race is looked at again inside the caller's transaction: the savepoint around
    # the insert keeps it usable, and the caller's other writes are kept.
    for _ in range(3):
        name = unique_queue("race_unique_atomic")
        answers = _enqueue_from_threads(name, ["k"], in_transaction=True)
        assert sum(result.created for _, result in answers) == 1, answers
        assert JobRow.objects.filter(queue_name=name, unique_key="k").count() == 1
        assert JobRow.objects.filter(queue_name=name, unique_key=None).count() == THREADS
