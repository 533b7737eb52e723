"""Outcomes racing on real connections: the graph's locks keep dependents and tallies exact."""

from __future__ import annotations

import threading

from django.db import connection

from queues.api import DequeueOptions, Job, JobBatch, JobGroup, JobOutcome, JobStatus
from tests.queues.conftest import unique_queue


def in_threads(functions):
    """Start each function in its own thread (and connection) at once; re-raise errors."""
    barrier = threading.Barrier(len(functions))
    errors: list[BaseException] = []

    def run(fn):
        try:
            barrier.wait()
            fn()
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(fn,)) for fn in functions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors


def test_parents_completing_at_once_release_their_child(db_queue):
    for _ in range(5):
        name = unique_queue("race_parents")
        parents = [Job(queue_name=name, payload={"p": i}) for i in range(4)]
        child = Job(queue_name=name, payload={"child": True})
        db_queue.enqueue_workflow(JobGroup("race").add_parallel_jobs(parents).then(child))
        runs = db_queue.dequeue(name, DequeueOptions.batch(10))
        assert len(runs) == 4
        in_threads(
            [lambda run=run: db_queue.finish_job_run(run, JobOutcome.completed()) for run in runs]
        )
        claimed = db_queue.dequeue(name, DequeueOptions.batch(10))
        assert [job.id for job in claimed] == [child.id], "the child was left waiting"


def test_batch_tallies_stay_exact_under_concurrent_outcomes(db_queue):
    name = unique_queue("race_batch")
    jobs = [Job(queue_name=name, payload={"i": i}, max_attempts=1) for i in range(40)]
    batch_id = db_queue.enqueue_batch(JobBatch("race", jobs=jobs))
    runs = db_queue.dequeue(name, DequeueOptions.batch(40))

    def finish(part):
        for run in part:
            outcome = JobOutcome.completed() if run.payload["i"] % 3 else JobOutcome.failed("x")
            db_queue.finish_job_run(run, outcome)

    in_threads([lambda part=runs[i::4]: finish(part) for i in range(4)])
    status = db_queue.get_batch_status(batch_id)
    counts = db_queue.get_job_counts_by_status(name)
    assert status.completed_jobs == counts[JobStatus.COMPLETED] == 26
    assert status.failed_jobs == counts[JobStatus.DEAD] == 14
    assert status.pending_jobs == 0 and status.status == "PartiallyFailed"
