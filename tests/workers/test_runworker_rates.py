"""A per-queue rate held by real processes: four `manage.py runworker` processes with ten
slots each work one queue whose rate is 5 jobs per 2 s; their handlers record their starts
with the ORM, and no window of 2 s (aligned to the clock, as the rate's are) has more than 5.

The processes read the real clock (a child's clock cannot be moved): the test opens the
queue just after a window starts, so that the first claims are not at a window's end."""

from __future__ import annotations

import math
import signal
import time
from collections import Counter

import pytest

from queues.api import Job, JobQueue, JobStatus
from queues.engine.base import Match
from queues.models import WorkerProcess

from .helpers import wait_until
from .limit_jobs import LIMITED_QUEUE, LimitedRun, create_table, drop_table
from .processes import live_workers
from .test_runworker import runworker  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db(transaction=True)
PROCESSES, RATE, PERIOD, JOBS = 4, 5, 2.0, 15
#: On PostgreSQL a job's `started_at` is its claim's time (read under the config row's
#: lock); elsewhere its start's, just after. The handlers record their own starts too.
AT_RATE = f"queue {LIMITED_QUEUE} is at its rate (every worker's): waiting for its next window"


@pytest.fixture
def limited_runs(transactional_db):
    create_table()
    yield
    drop_table()


def per_window(times: list[float]) -> Counter:
    """How many of `times` (Unix seconds) fall in each window of PERIOD, by its number."""
    return Counter(math.floor(t / PERIOD) for t in times)


def test_four_runworkers_start_at_most_the_rate_per_window(runworker, limited_runs):  # noqa: F811
    queue = JobQueue()
    queue.queue_config(LIMITED_QUEUE, rate=(RATE, PERIOD))
    queue.pause_queue(LIMITED_QUEUE)  # until every process is up
    ids = queue.enqueue_many(
        [Job(queue_name=LIMITED_QUEUE, payload={"seconds": 0.05}) for _ in range(JOBS)]
    )
    args = ("--concurrency", "10", "--batch-size", "10", "--include", "tests.workers.limit_jobs")
    runs = [runworker(LIMITED_QUEUE, *args) for _ in range(PROCESSES)]
    wait_until(
        lambda: all(live_workers(run.proc.pid) for run in runs), 60, "the workers did not start"
    )
    # Open the queue 0.1 s into a window: its first claims then fall well inside it.
    time.sleep(PERIOD - time.time() % PERIOD + 0.1)
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
    handlers = per_window([r.started for r in recorded])
    engine = per_window(
        [j.started_at.timestamp() for j in queue.store.find_jobs(Match(queue_name=LIMITED_QUEUE))]
    )
    for counted in (handlers, engine):
        assert max(counted.values()) <= RATE, sorted(counted.items())
        assert len(counted) >= JOBS // RATE, sorted(counted.items())
    assert sum(run.text().count(AT_RATE) for run in runs) >= 1
    assert not WorkerProcess.objects.exists()


def test_per_window_counts_by_aligned_windows():
    assert per_window([0.0, 1.99, 2.0, 5.9]) == Counter({0: 2, 1: 1, 2: 1})
