"""A batch's callback under a race: eight `runworker` processes finish the batch's last
eight jobs at once (each waits at a barrier until all are running), and exactly one callback
job is enqueued, a django.tasks task that a worker then runs."""

from __future__ import annotations

import json

import pytest

from queues.api import Job, JobBatch, JobQueue, JobStatus
from queues.models import Batch
from tests.workers.runworker.test_runworker import runworker  # noqa: F401  (the fixture)
from tests.workers.support.callback_jobs import CALLBACKS, MEMBERS, note_group

pytestmark = pytest.mark.django_db(transaction=True)

N = 8


def test_eight_processes_finishing_a_batch_enqueue_one_callback(runworker, tmp_path):  # noqa: F811
    barrier, notes = tmp_path / "barrier", tmp_path / "notes.log"
    barrier.mkdir()
    payload = {"barrier": str(barrier), "n": N}
    jobs = [Job(queue_name=MEMBERS, payload=payload) for _ in range(N)]
    batch = JobBatch("race", jobs=jobs).on_success(note_group, args=[str(notes)])
    batch.on_complete(note_group, args=[str(notes)])
    queue = JobQueue()
    batch_id = queue.enqueue_batch(batch)

    # One job at a time each: the barrier holds every process until all eight run one.
    args = [MEMBERS, CALLBACKS, "--burst", "--batch-size", "1", "--concurrency", "1"]
    include = ["--include", "tests.workers.support.callback_jobs"]
    runs = [runworker(*args, *include) for _ in range(N)]
    for run in runs:
        assert run.wait(180) == 0, run.text()
    pids = {(barrier / str(job.id)).read_text() for job in jobs}
    assert len(pids) == N, "each member ran in a process of its own"

    row = Batch.objects.get(id=batch_id)
    assert row.completed_jobs == N and set(row.callback_jobs) == {"success", "complete"}
    callbacks = Job.objects.filter(queue_name=CALLBACKS)
    assert sorted(str(job.id) for job in callbacks) == sorted(row.callback_jobs.values())
    if callbacks.exclude(status=JobStatus.COMPLETED).exists():
        # Each process exits once it finds nothing to claim: a last one runs what is left.
        assert runworker(CALLBACKS, "--burst", *include).wait(60) == 0
    assert all(job.status == JobStatus.COMPLETED for job in callbacks.all())
    noted = [json.loads(line) for line in notes.read_text().splitlines()]
    assert sorted(note["event"] for note in noted) == ["complete", "success"]
    assert {(note["id"], note["completed_jobs"]) for note in noted} == {(str(batch_id), N)}
