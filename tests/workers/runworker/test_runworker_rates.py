"""A per-queue rate held by real processes: four `manage.py runworker` processes with ten
slots each work one queue whose rate is 5 jobs per 2 s; their handlers record their starts
with the ORM, and no window of 2 s (aligned to the clock, as the rate's are) has more than 5.

The processes read the real clock (a child's clock cannot be moved): the test opens the
queue just after a window starts, so that the first claims are not at a window's end."""

from __future__ import annotations

import math
import time
from collections import Counter

import pytest

from queues.api import JobQueue
from queues.store.base import Match
from tests.workers.runworker.test_runworker import runworker  # noqa: F401 (a fixture)
from tests.workers.support.limit_jobs import LIMITED_QUEUE
from tests.workers.support.limited_fleet import limited_runs, run_fleet  # noqa: F401 (limited_runs: a fixture)

pytestmark = pytest.mark.django_db(transaction=True)
PROCESSES, RATE, PERIOD, JOBS = 4, 5, 2.0, 15
#: On PostgreSQL a job's `started_at` is its claim's time (read under the config row's
#: lock); elsewhere its start's, just after. The handlers record their own starts too.
AT_RATE = f"queue {LIMITED_QUEUE} is at its rate (every worker's): waiting for its next window"


def per_window(times: list[float]) -> Counter:
    """How many of `times` (Unix seconds) fall in each window of PERIOD, by its number."""
    return Counter(math.floor(t / PERIOD) for t in times)


def test_four_runworkers_start_at_most_the_rate_per_window(runworker, limited_runs):  # noqa: F811
    queue = JobQueue()
    queue.queue_config(LIMITED_QUEUE, rate=(RATE, PERIOD))

    def open_early_in_a_window() -> None:
        # 0.1 s into a window: the first claims then fall well inside it.
        time.sleep(PERIOD - time.time() % PERIOD + 0.1)

    recorded, runs = run_fleet(
        runworker, PROCESSES, JOBS, seconds=0.05, before_resume=open_early_in_a_window
    )

    handlers = per_window([r.started for r in recorded])
    engine = per_window(
        [j.started_at.timestamp() for j in queue.store.find_jobs(Match(queue_name=LIMITED_QUEUE))]
    )
    for counted in (handlers, engine):
        assert max(counted.values()) <= RATE, sorted(counted.items())
        assert len(counted) >= JOBS // RATE, sorted(counted.items())
    assert sum(run.text().count(AT_RATE) for run in runs) >= 1


def test_per_window_counts_by_aligned_windows():
    assert per_window([0.0, 1.99, 2.0, 5.9]) == Counter({0: 2, 1: 1, 2: 1})
