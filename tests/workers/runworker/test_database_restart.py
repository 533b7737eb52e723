"""The database server restarted under `runworker`, whose handler writes through the ORM as
a user's does; in the chaos test, children killed with SIGKILL as well. No job is lost,
Failed or Dead because of it, and every job is Completed within 60 s of the server's return
(the leases are the default five minutes: nothing waits for the reaper). Each handler run
writes a `HandlerRun` row, so runs are counted where they happened.

Restarting the shared servers breaks other test runs: these tests are marked `dbrestart`
(and `pgrestart`, the marker other runs deselect), and run last.
"""

from __future__ import annotations

import os
import re
import signal
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pytest
from django.db import connection
from django.db.models import Max, Min

from queues.api import Job, JobQueue
from queues.models import ReaperRun
from tests.pgbouncer.pooling import skip_through_a_pooler
from tests.workers.runworker.test_runworker import runworker  # noqa: F401 (a fixture)
from tests.workers.support.chaos_jobs import CHAOS_QUEUE
from tests.workers.support.handler_runs import runs_per_job
from tests.workers.support.helpers import wait_until
from tests.workers.support.processes import live_workers
from tests.workers.support.servers import restart_server

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.dbrestart,
    pytest.mark.pgrestart,
    pytest.mark.skipif(connection.vendor == "sqlite", reason="SQLite has no server"),
]
#: After the server is back, every job is Completed within this many seconds.
RECOVERY = 60.0
GIVEN_BACK = re.compile(r"job ([0-9a-f-]{36}) given back after the database went away")


@dataclass
class Chaos:
    """One run: `jobs` jobs on `processes` worker processes of `concurrency` slots, each
    run taking `seconds` before its write; `kills` children killed before the restart at
    the given fractions of the jobs completed, and after it."""

    jobs: int
    processes: int
    concurrency: int
    seconds: float
    kills_before: tuple[float, ...] = ()
    restart_at: float = 0.2
    kills_after: tuple[float, ...] = ()
    batch_size: int = 10
    killed: list[int] = field(default_factory=list)
    back_at: float = 0.0
    completed_at_restart: int = 0

    @property
    def kills(self) -> int:
        return len(self.kills_before) + len(self.kills_after)

    def run(self, runworker, queue: JobQueue):  # noqa: F811
        # A job loses an attempt only to a kill of a process that held it: with max_attempts
        # above the kills, none can be Dead because of them.
        ids = queue.enqueue_many(
            [
                Job(queue_name=CHAOS_QUEUE, payload={"seconds": self.seconds},
                    max_attempts=self.kills + 2)
                for _ in range(self.jobs)
            ]
        )
        run = runworker(
            CHAOS_QUEUE,
            *("--processes", str(self.processes)),
            *("--batch-size", str(self.batch_size)),
            *("--concurrency", str(self.concurrency)),
            *("--include", "tests.workers.support.chaos_jobs"),
        )
        workers = lambda: live_workers(run.proc.pid)  # noqa: E731
        for fraction in self.kills_before:
            self._kill_at(queue, fraction, workers)
        self._until(queue, self.restart_at)
        self.completed_at_restart = completed(queue)
        self.back_at = restart_server()
        for fraction in self.kills_after:
            self._kill_at(queue, fraction, workers)
        deadline = self.back_at + RECOVERY + 5
        while completed(queue) < self.jobs:
            counts = queue.get_job_counts_by_status(CHAOS_QUEUE)
            assert time.time() < deadline, f"left after the restart: {counts}\n{run.text()[-3000:]}"
            time.sleep(0.1)
        assert run.proc.poll() is None, f"runworker died:\n{run.text()}"
        wait_until(lambda: len(workers()) == self.processes, 30, "children not back")
        run.signal(signal.SIGTERM)
        assert run.wait(60) == 0, run.text()[-3000:]
        return ids, run.text()

    def _until(self, queue: JobQueue, fraction: float) -> None:
        wait_until(lambda: completed(queue) >= fraction * self.jobs, 60, "the run stalled")

    def _kill_at(self, queue: JobQueue, fraction: float, workers) -> None:
        self._until(queue, fraction)
        wait_until(lambda: len(workers()) == self.processes, 30, "children not up")
        victim = workers()[0]
        os.kill(victim, signal.SIGKILL)
        self.killed.append(victim)
        # The supervisor sees it go, hands back its jobs and starts another.
        wait_until(lambda: victim not in workers(), 10, "the killed child lingers")


def completed(queue: JobQueue) -> int:
    return queue.get_job_counts_by_status(CHAOS_QUEUE)["Completed"]


def check(chaos: Chaos, queue: JobQueue, ids: list, output: str) -> dict:
    """What every run must show; the figures for the record."""
    counts = queue.get_job_counts_by_status(CHAOS_QUEUE)
    assert counts["Completed"] == chaos.jobs, counts
    assert sum(counts.values()) == chaos.jobs, f"jobs not Completed: {counts}"
    assert chaos.completed_at_restart < 0.9 * chaos.jobs, "the restart came too late to tell"
    assert "database fault" in output and "database is back" in output
    assert output.count("exited with -9; restarting") == chaos.kills

    runs = runs_per_job()
    assert set(runs) == set(ids), "a Completed job has no run"
    given_back = Counter(GIVEN_BACK.findall(output))
    handed_back = {
        job_id
        for row in ReaperRun.objects.filter(ran_by__startswith="supervisor:")
        for job_id in row.requeued_ids + row.dead_ids
    }
    assert not any(
        row.dead_ids for row in ReaperRun.objects.all()
    ), "a job was Dead for a kill"
    # A job runs twice only if its run was under way when its process was killed (at most
    # `concurrency` of them per kill: a slot holds one job until its outcome is written),
    # or when the server went away (at most `concurrency` per process).
    duplicates = {job_id: n for job_id, n in runs.items() if n > 1}
    bound = (chaos.kills + chaos.processes) * chaos.concurrency
    assert len(duplicates) <= bound, f"{len(duplicates)} jobs ran twice (bound {bound})"
    for job_id in duplicates:
        assert str(job_id) in handed_back or str(job_id) in given_back, (
            f"job {job_id} ran {duplicates[job_id]} times, neither killed nor given back"
        )
    # Every run is covered by an attempt, but for those given back (not counted).
    attempts = dict(Job.objects.filter(queue_name=CHAOS_QUEUE).values_list("id", "attempts"))
    for job_id, n in runs.items():
        assert n <= attempts[job_id] + given_back[str(job_id)], (
            f"job {job_id}: {n} runs, {attempts[job_id]} attempts"
        )
    back = datetime.fromtimestamp(chaos.back_at, UTC)
    after = Job.objects.filter(queue_name=CHAOS_QUEUE, completed_at__gte=back)
    times = after.aggregate(first=Min("completed_at"), last=Max("completed_at"))
    recovery = (times["last"] - back).total_seconds()
    assert recovery <= RECOVERY, f"the last job completed {recovery:.1f}s after the server's return"
    figures = {
        "vendor": connection.vendor,
        "jobs": chaos.jobs,
        "processes": chaos.processes,
        "kills": chaos.kills,
        "restarts": 1,
        "duplicates": len(duplicates),
        "given_back": sum(given_back.values()),
        "handed_back": len(handed_back),
        "first_completion_s": round((times["first"] - back).total_seconds(), 2),
        "last_completion_s": round(recovery, 1),
    }
    print(f"\nchaos figures: {figures}")
    return figures


def test_runworker_carries_on_through_a_server_restart(runworker, handler_runs):  # noqa: F811
    """One process (`--processes 1`), the server restarted once."""
    skip_through_a_pooler()  # (tests/pgbouncer restarts the pooler instead)
    queue = JobQueue()
    chaos = Chaos(jobs=1500, processes=1, concurrency=4, seconds=0.02)
    ids, output = chaos.run(runworker, queue)
    check(chaos, queue, ids, output)


def test_chaos_kills_and_a_server_restart(runworker, handler_runs):  # noqa: F811
    """`--processes 2`, children killed with SIGKILL twice before the restart and once
    after it."""
    skip_through_a_pooler()  # (tests/pgbouncer restarts the pooler instead)
    queue = JobQueue()
    chaos = Chaos(
        jobs=3000,
        processes=2,
        concurrency=2,
        seconds=0.02,
        kills_before=(0.1, 0.2),
        restart_at=0.33,
        kills_after=(0.5,),
    )
    ids, output = chaos.run(runworker, queue)
    check(chaos, queue, ids, output)
