"""The jobs a claim hands out are built from its raw rows (queues/store/sql/rows.py) without
`Model.__init__`: each must be the job the ORM would load, and a project's `pre_init` or
`post_init` receiver for jobs must still be heard."""

from __future__ import annotations

import uuid

import pytest
from django.db.models.signals import post_init

from queues.api import DequeueOptions, Job, JobQueue
from queues.models import Job as JobModel
from tests.queues.conftest import unique_queue

pytestmark = pytest.mark.django_db(transaction=True)


def _fields(job) -> dict:
    return {f.attname: getattr(job, f.attname) for f in JobModel._meta.concrete_fields}


def test_a_claimed_job_is_the_job_the_orm_loads_and_saves_as_one():
    queue = JobQueue()
    name = unique_queue("rows")
    queue.enqueue(Job(queue_name=name, payload={"a": [1, "é"]}, priority=3, tags=["x"]))
    (claimed,) = queue.dequeue(name, DequeueOptions.batch(5))
    loaded = JobModel.objects.get(id=claimed.id)
    assert _fields(claimed) == _fields(loaded)
    assert (claimed._state.adding, claimed._state.db) == (False, loaded._state.db)
    claimed.error_message = "saved through the ORM"
    claimed.save(update_fields=["error_message"])  # an UPDATE, not an INSERT: not adding
    assert JobModel.objects.get(id=claimed.id).error_message == "saved through the ORM"
    assert JobModel.objects.filter(queue_name=name).count() == 1


def test_a_post_init_receiver_hears_every_claimed_job():
    queue = JobQueue()
    name = unique_queue("rows_signal")
    queue.enqueue_many(Job(queue_name=name) for _ in range(3))
    heard = []

    def receiver(sender, instance, **kwargs):
        heard.append(instance.id)

    post_init.connect(receiver, sender=JobModel)
    try:
        claimed = queue.dequeue(name, DequeueOptions.batch(3))
    finally:
        post_init.disconnect(receiver, sender=JobModel)
    assert {job.id for job in claimed} <= set(heard) and len(claimed) == 3


def test_the_columns_a_claim_sets_are_those_the_orm_loads_and_empty_json_is_not_shared():
    """A claim returns no status, start, heartbeat, lease, token or claimant (it set them from
    its parameters; the store stamps them) and builds the empty tags, meta and dependencies
    without a decode: each job still equals the row the ORM loads, and owns its lists."""
    queue = JobQueue()
    name = unique_queue("rows_stamp")
    queue.enqueue_many(Job(queue_name=name, payload={"i": i}) for i in range(3))
    process = uuid.uuid4()
    claimed = queue.dequeue(name, DequeueOptions.batch(3), claimed_by=process)
    assert len(claimed) == 3
    for job in claimed:
        assert _fields(job) == _fields(JobModel.objects.get(id=job.id))
        assert (job.status, job.claimed_by, job.tags, job.meta) == ("Running", process, [], {})
    first, second, _ = claimed
    first.tags.append("mine")
    first.meta["k"] = 1
    first.depends_on.append("x")
    assert (second.tags, second.meta, second.depends_on) == ([], {}, [])


def test_rows_without_a_column_of_the_job_are_refused():
    from django.db import connection

    from queues.store.sql.rows import RowReader

    columns = [f.column for f in JobModel._meta.concrete_fields if f.column != "meta"]
    with pytest.raises(ValueError, match="no meta"):
        RowReader(connection).read([(c,) for c in columns], [])
