"""A per-queue limit held by real processes: four `manage.py runworker` processes with ten
slots each work one queue limited to three; their handlers record their starts and ends with
the ORM, and never more than three overlap."""

from __future__ import annotations

import pytest

from queues.api import JobQueue
from tests.workers.runworker.test_runworker import runworker  # noqa: F401 (a fixture)
from tests.workers.support.limit_jobs import LIMITED_QUEUE, LimitedRun, most_at_once
from tests.workers.support.limited_fleet import limited_runs, run_fleet  # noqa: F401 (limited_runs: a fixture)

pytestmark = pytest.mark.django_db(transaction=True)
PROCESSES, LIMIT, JOBS = 4, 3, 30
AT_LIMIT = f"queue {LIMITED_QUEUE} is at its limit of {LIMIT} running jobs"


def test_four_runworkers_of_ten_slots_run_at_most_the_limit(runworker, limited_runs):  # noqa: F811
    JobQueue().queue_config(LIMITED_QUEUE, max_running=LIMIT)
    recorded, runs = run_fleet(runworker, PROCESSES, JOBS, seconds=0.3)

    assert all(r.ended is not None for r in recorded)
    # The first claim takes the three at once and its slots start them together.
    assert most_at_once(recorded) == LIMIT, [(r.pid, r.started, r.ended) for r in recorded]
    # Each worker says when it waits at the limit, not at every poll (every 50 ms here).
    said = [run.text().count(AT_LIMIT) for run in runs]
    assert sum(said) >= 1 and max(said) <= 3, said


def test_most_at_once_counts_overlaps_only():
    def run(started: float, ended: float) -> LimitedRun:
        return LimitedRun(started=started, ended=ended)

    assert most_at_once([run(0, 1), run(1, 2), run(2, 3)]) == 1
    assert most_at_once([run(0, 3), run(1, 2), run(1.5, 4), run(3.5, 5)]) == 3
    assert most_at_once([]) == 0
