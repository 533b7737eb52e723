"""Several `manage.py runworker` processes on the limited queue of `limit_jobs`, started
together: the scaffold of the tests that hold a limit or a rate across processes.

The queue is paused until every process has registered, so that all of them compete for the
first jobs (otherwise the first to start takes them all and nothing is shared); each process
is then stopped with SIGTERM and must exit cleanly, and none may leave its registration."""

from __future__ import annotations

import signal
from collections.abc import Callable

import pytest

from queues.api import Job, JobQueue, JobStatus
from queues.models import WorkerProcess
from tests.workers.support.helpers import wait_until
from tests.workers.support.limit_jobs import LIMITED_QUEUE, LimitedRun, create_table, drop_table
from tests.workers.support.processes import live_workers


@pytest.fixture
def limited_runs(transactional_db):
    """The handlers' table, for the test's length."""
    create_table()
    yield
    drop_table()


ARGS = ("--concurrency", "10", "--batch-size", "10", "--include",
"tests.workers.support.limit_jobs")


def run_fleet(
    runworker,
    processes: int,
    jobs: int,
    seconds: float,
    before_resume: Callable[[], None] | None = None,
) -> tuple[list[LimitedRun], list]:
    """Enqueue `jobs` jobs of `seconds` each on the (already configured) limited queue, run
    them on `processes` runworkers and stop those; the handlers' `LimitedRun` rows (one per
    job, checked) and the runs (`run.text()` is a process's log), as `(recorded, runs)`.
    `before_resume` runs once all are up, just before the queue opens."""
    queue = JobQueue()
    queue.pause_queue(LIMITED_QUEUE)
    ids = queue.enqueue_many(
        [Job(queue_name=LIMITED_QUEUE, payload={"seconds": seconds}) for _ in range(jobs)]
    )
    runs = [runworker(LIMITED_QUEUE, *ARGS) for _ in range(processes)]
    wait_until(
        lambda: all(live_workers(run.proc.pid) for run in runs), 60, "the workers did not start"
    )
    if before_resume is not None:
        before_resume()
    queue.resume_queue(LIMITED_QUEUE)

    def done() -> bool:
        return queue.get_job_counts_by_status(LIMITED_QUEUE)[JobStatus.COMPLETED] == jobs

    wait_until(done, 120, "the jobs did not complete")
    for run in runs:
        run.signal(signal.SIGTERM)
    for run in runs:
        assert run.wait() == 0, run.text()
    assert not WorkerProcess.objects.exists()

    recorded = list(LimitedRun.objects.all())
    assert sorted(str(r.job_id) for r in recorded) == sorted(str(i) for i in ids)
    return recorded, runs
