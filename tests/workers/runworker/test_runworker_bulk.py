"""A dashboard's "all matching" operation is carried out by a `runworker` process (its
maintenance loop), whatever queues it works: no other process is needed."""

from __future__ import annotations

import signal

import pytest

from queues.api import Job, JobQueue, JobStatus
from queues.models import BulkOperation
from queues.ops import bulk
from queues.reads.search import SearchFilter
from tests.conftest import unique_queue
from tests.workers.runworker.test_runworker import runworker  # noqa: F401  (the fixture)
from tests.workers.support.helpers import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def test_runworker_carries_out_a_pending_bulk_operation(runworker):  # noqa: F811
    engine = JobQueue()
    queue = unique_queue("bulk")
    ids = engine.enqueue_many([Job(queue_name=queue, payload={"n": i}) for i in range(30)])
    for job_id in ids[:20]:
        engine.mark_job_dead(job_id, "boom")
    flt = SearchFilter.from_query({"queue": queue, "status": JobStatus.DEAD})
    op = bulk.start(flt, "delete", "ops")
    run = runworker(unique_queue("idle"))

    def finished() -> bool:
        op.refresh_from_db()
        return op.finished

    wait_until(finished, 60, "the operation was not carried out")
    run.signal(signal.SIGTERM)
    assert run.wait() == 0, run.text()
    assert (op.status, op.done, op.claimed_by.startswith("runworker:")) == ("completed", 20, True)
    assert BulkOperation.objects.get(pk=op.pk).finished_at is not None
    left = {engine.get_job(i) is None for i in ids[:20]} | {engine.get_job(ids[-1]) is None}
    assert left == {True, False}
