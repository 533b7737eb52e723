"""`runworker --processes 2` (child processes) through PgBouncer in transaction mode with
the default settings, as a new user runs it: 3,000 jobs whose handler writes a row with the
ORM, none lost or doubled; and the chaos test's kills with the pooler itself restarted (every
client connection broken at once), no job lost."""

from __future__ import annotations

import pytest

from queues.api import Job, JobQueue
from tests.pgbouncer.pooling import restart_pgbouncer
from tests.workers.runworker import test_database_restart as chaos_run
from tests.workers.runworker.test_runworker import runworker  # noqa: F401 (a fixture)
from tests.workers.support.chaos_jobs import CHAOS_QUEUE
from tests.workers.support.handler_runs import runs_per_job

pytestmark = pytest.mark.django_db(transaction=True)
CHAOS = ("--include", "tests.workers.support.chaos_jobs")


def test_3000_orm_jobs_on_two_processes_none_lost_or_doubled(runworker, handler_runs):  # noqa: F811
    queue = JobQueue()
    ids = queue.enqueue_many([Job(queue_name=CHAOS_QUEUE) for _ in range(3000)])
    run = runworker(CHAOS_QUEUE, "--processes", "2", "--burst", *CHAOS)
    assert run.wait(300) == 0, run.text()[-3000:]

    counts = queue.get_job_counts_by_status(CHAOS_QUEUE)
    assert counts["Completed"] == 3000 and sum(counts.values()) == 3000, counts
    assert runs_per_job() == dict.fromkeys(ids, 1)
    text = run.text()
    assert "Traceback" not in text and "exited with" not in text, text[-3000:]


def test_chaos_kills_and_a_pooler_restart(runworker, handler_runs, monkeypatch):  # noqa: F811
    monkeypatch.setattr(chaos_run, "restart_server", restart_pgbouncer)
    queue = JobQueue()
    chaos = chaos_run.Chaos(
        jobs=1500,
        processes=2,
        concurrency=2,
        seconds=0.01,
        kills_before=(0.1,),
        restart_at=0.3,
        kills_after=(0.5,),
    )
    ids, output = chaos.run(runworker, queue)
    chaos_run.check(chaos, queue, ids, output)
