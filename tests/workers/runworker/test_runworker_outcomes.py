"""`manage.py runworker` (a child process, batch 50, concurrency 10) stores what users'
handlers give back, now written in the batched statements: a dict result, a django.tasks
@task's return value, an ORM-writing handler's result and its rows, an async handler's
result, a retried run's error history and final result, a dead run's errors."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.tasks.base import TaskResultStatus

from hammerweb.measure.benchmark import shapes
from hammerweb.measure.models import BenchNote
from queues.api import Job, JobQueue, JobStatus, RetryStrategy
from tests.workers.runworker.test_runworker import runworker  # noqa: F401  (the fixture)
from tests.workers.support.outcome_jobs import ASYNC, BROKEN, FLAKY

pytestmark = pytest.mark.django_db(transaction=True)

N = 60
QUEUES = [shapes.DICT, shapes.TASK, shapes.ORM, ASYNC, FLAKY, BROKEN]


def test_runworker_stores_every_outcome_shape(runworker):  # noqa: F811
    queue = JobQueue()
    BenchNote.objects.bulk_create(BenchNote(job_id=uuid.UUID(int=i), n=i) for i in range(N))
    retry_now = RetryStrategy.fixed(timedelta(0)).to_dict()
    ids = {
        name: queue.enqueue_many(
            Job(queue_name=name, payload={"i": i}, max_attempts=2, retry_strategy=retry_now)
            for i in range(N)
        )
        for name in (shapes.DICT, shapes.ORM, ASYNC, FLAKY, BROKEN)
    }
    tasks = [shapes.add.enqueue(i, 1) for i in range(N)]

    includes = ["--include", shapes.__name__, "--include", "tests.workers.support.outcome_jobs"]
    run = runworker(*QUEUES, "--burst", "--batch-size", "50", "--concurrency", "10", *includes)
    assert run.wait(120) == 0, run.text()

    for i, job_id in enumerate(ids[shapes.DICT]):
        job = queue.get_job(job_id)
        assert (job.status, job.result) == (JobStatus.COMPLETED, {"ok": True, "n": i})
    for i, result in enumerate(tasks):
        stored = shapes.add.get_result(result.id)
        assert stored.status == TaskResultStatus.SUCCESSFUL and stored.return_value == i + 1
    written = {note.job_id: note for note in BenchNote.objects.filter(job_id__in=ids[shapes.ORM])}
    assert len(written) == N
    for job_id in ids[shapes.ORM]:
        assert queue.get_job(job_id).result == {"note": written[job_id].pk}
    for i, job_id in enumerate(ids[ASYNC]):
        assert queue.get_job(job_id).result == {"i": i, "notes": 1}
    for i, job_id in enumerate(ids[FLAKY]):
        job = queue.get_job(job_id)
        assert (job.status, job.result, job.attempts) == (JobStatus.COMPLETED, {"attempt": 2}, 2)
        (attempt,) = queue.get_job_attempts(job_id)
        assert attempt.error == f"ConnectionError: first attempt of {i}"
        assert attempt.status == JobStatus.PENDING
        assert attempt.exception_class == "builtins.ConnectionError"
    for i, job_id in enumerate(ids[BROKEN]):
        job = queue.get_job(job_id)
        assert job.status == JobStatus.DEAD and job.error_message == f"ValueError: broken {i}"
        errors = [(a.attempt, a.status) for a in queue.get_job_attempts(job_id)]
        assert errors == [(1, JobStatus.PENDING), (2, JobStatus.DEAD)]
