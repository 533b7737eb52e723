"""A per-queue limit held by real processes: four `manage.py runworker` processes with ten
slots each work one queue limited to three; their handlers record their starts and ends with
the ORM, and never more than three overlap."""

from __future__ import annotations

import signal

import pytest

from queues.api import Job, JobQueue, JobStatus
from queues.models import WorkerProcess

from .helpers import wait_until
from .limit_jobs import LIMITED_QUEUE, LimitedRun, create_table, drop_table, most_at_once
from .processes import live_workers
from .test_runworker import runworker  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db(transaction=True)
PROCESSES, LIMIT, JOBS = 4, 3, 30
AT_LIMIT = f"queue {LIMITED_QUEUE} is at its limit of {LIMIT} running jobs"


@pytest.fixture
def limited_runs(transactional_db):
    create_table()
    yield
    drop_table()


def test_four_runworkers_of_ten_slots_run_at_most_the_limit(runworker, limited_runs):  # noqa: F811
    queue = JobQueue()
    queue.queue_config(LIMITED_QUEUE, max_running=LIMIT)
    # Paused until every process is up, so that all four compete for the queue.
    queue.pause_queue(LIMITED_QUEUE)
    ids = queue.enqueue_many(
        [Job(queue_name=LIMITED_QUEUE, payload={"seconds": 0.3}) for _ in range(JOBS)]
    )
    args = ("--concurrency", "10", "--batch-size", "10", "--include", "tests.workers.limit_jobs")
    runs = [runworker(LIMITED_QUEUE, *args) for _ in range(PROCESSES)]
    wait_until(
        lambda: all(live_workers(run.proc.pid) for run in runs), 60, "the workers did not start"
    )
    queue.resume_queue(LIMITED_QUEUE)

    def done() -> bool:
        return queue.get_job_counts_by_status(LIMITED_QUEUE)[JobStatus.COMPLETED] == JOBS

    wait_until(done, 120, "the jobs did not complete")
    for run in runs:
        run.signal(signal.SIGTERM)
    for run in runs:
        assert run.wait() == 0, run.text()

    recorded = list(LimitedRun.objects.all())
    assert sorted(str(r.job_id) for r in recorded) == sorted(str(i) for i in ids)
    assert all(r.ended is not None for r in recorded)
    # The first claim takes the three at once and its slots start them together.
    assert most_at_once(recorded) == LIMIT, [(r.pid, r.started, r.ended) for r in recorded]
    # Each worker says when it waits at the limit, not at every poll (every 50 ms here).
    said = [run.text().count(AT_LIMIT) for run in runs]
    assert sum(said) >= 1 and max(said) <= 3, said
    assert not WorkerProcess.objects.exists()


def test_most_at_once_counts_overlaps_only():
    def run(started: float, ended: float) -> LimitedRun:
        return LimitedRun(started=started, ended=ended)

    assert most_at_once([run(0, 1), run(1, 2), run(2, 3)]) == 1
    assert most_at_once([run(0, 3), run(1, 2), run(1.5, 4), run(3.5, 5)]) == 3
    assert most_at_once([]) == 0
