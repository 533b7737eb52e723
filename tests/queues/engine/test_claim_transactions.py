"""A strict claim on PostgreSQL is one statement and runs in autocommit; inside a caller's
transaction it must still belong to that transaction."""

from __future__ import annotations

import pytest
from django.db import transaction

from queues.api import DequeueOptions, Job, JobStatus
from tests.queues.conftest import unique_queue


class Rollback(Exception):
    pass


def test_a_claim_inside_a_transaction_is_undone_with_it(db_queue):
    name = unique_queue("claim_tx")
    job_id = db_queue.enqueue(Job(queue_name=name))
    with pytest.raises(Rollback), transaction.atomic():
        assert [job.id for job in db_queue.dequeue(name, DequeueOptions.batch(5))] == [job_id]
        raise Rollback
    assert db_queue.get_job(job_id).status == JobStatus.PENDING


def test_a_claim_on_its_own_is_committed(db_queue):
    name = unique_queue("claim_commit")
    job_id = db_queue.enqueue(Job(queue_name=name))
    assert db_queue.dequeue(name, DequeueOptions.batch(5))[0].id == job_id
    # Rolling back an unrelated transaction afterwards does not undo it.
    with pytest.raises(Rollback), transaction.atomic():
        raise Rollback
    assert db_queue.get_job(job_id).status == JobStatus.RUNNING
