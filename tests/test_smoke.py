from __future__ import annotations

import pytest

from queues.api import Job, JobOutcome, JobQueue, JobStatus


@pytest.mark.django_db
def test_enqueue_claim_finish_round_trip():
    queue = JobQueue()
    job_id = queue.enqueue(Job(queue_name="smoke", payload={"to": "a@b.c"}))
    claimed = queue.dequeue_one("smoke")
    assert claimed is not None and claimed.id == job_id
    recorded = queue.finish_job_run(claimed, JobOutcome.completed({"sent": True}))
    assert recorded is not None and recorded.status == JobStatus.COMPLETED
    stored = queue.get_job(job_id)
    assert stored.status == JobStatus.COMPLETED
    assert stored.result == {"sent": True}
