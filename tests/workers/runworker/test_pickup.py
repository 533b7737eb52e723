"""An idle `runworker` (a child process) notices new work without waiting for its poll: on
PostgreSQL a NOTIFY wakes it, on SQLite a changed `PRAGMA data_version`, on MariaDB a check
of `next_due`; a scheduled job wakes it at its time; on PostgreSQL a NOTIFY it missed is
covered by the poll, and its LISTEN connection comes back after being killed. Through a
transaction pool (PgBouncer) PostgreSQL has no LISTEN: checks of `next_due` find new work,
and the LISTEN tests skip.

The poll interval is 60 s, and the worker logs why each sleep ended (`woken (<reason>)`):
the tests assert the reason, never a duration."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connection, transaction
from django.utils import timezone

from queues.api import Job, JobQueue, JobStatus
from tests.conftest import ROOT
from tests.pgbouncer.pooling import skip_through_a_pooler, through_a_pooler
from tests.workers.support.helpers import wait_until
from tests.workers.support.subprocess_jobs import WORK_QUEUE

BASE_DIR = ROOT
WAIT = 60.0  # generous: the machine is shared; the poll interval is what must not pass

pytestmark = pytest.mark.django_db(transaction=True)

postgresql_only = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="LISTEN/NOTIFY is PostgreSQL's"
)


def woken_by_new_job() -> str:
    """What wakes an idle worker for a new job on this database (through a transaction
    pool PostgreSQL has no LISTEN: the checks find it, as on MariaDB)."""
    return "notify" if connection.vendor == "postgresql" and not through_a_pooler() else "changed"


class IdleWorker:
    """`manage.py runworker sub_work -v 3 --poll-interval POLL`, output in a file."""

    def __init__(self, tmp_path: Path, poll: str = "60", queues=(WORK_QUEUE,)) -> None:
        self.output = tmp_path / f"runworker-{time.monotonic_ns()}.log"
        env = {**os.environ, "HAMMERWEB_USE_TEST_DB": "1", "PYTHONUNBUFFERED": "1"}
        args = ["--poll-interval", poll, "--include", "tests.workers.support.subprocess_jobs"]
        with open(self.output, "w") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "manage.py", "runworker", *queues, "-v", "3", *args],
                cwd=BASE_DIR,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def text(self) -> str:
        return self.output.read_text()

    def count(self, line: str) -> int:
        return len(re.findall(re.escape(line), self.text()))

    def wait_for(self, line: str, n: int = 1) -> None:
        wait_until(lambda: self.count(line) >= n, WAIT, f"no {line!r} x{n}:\n{self.text()}")

    def wait_idle(self) -> int:
        """Wait until it sleeps after a claim; how many sleeps it began so far."""
        self.wait_for(f"queue {WORK_QUEUE}: idle")
        return self.count(f"queue {WORK_QUEUE}: idle")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(WAIT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def idle_worker(tmp_path):
    started: list[IdleWorker] = []

    def start(poll: str = "60", queues=(WORK_QUEUE,)) -> IdleWorker:
        worker = IdleWorker(tmp_path, poll, queues)
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.stop()


def wait_completed(job_id) -> None:
    def completed() -> bool:
        return JobQueue().get_job(job_id).status == JobStatus.COMPLETED

    wait_until(completed, WAIT, f"job {job_id} did not complete")


def test_a_new_job_wakes_an_idle_worker_before_its_poll(idle_worker):
    worker = idle_worker()
    worker.wait_idle()
    job_id = JobQueue().enqueue(Job(queue_name=WORK_QUEUE, payload={}))
    wait_completed(job_id)
    assert worker.count(f"queue {WORK_QUEUE}: woken ({woken_by_new_job()})") >= 1
    assert worker.count(f"queue {WORK_QUEUE}: woken (poll)") == 0


def test_of_several_idle_queues_only_the_one_with_new_work_wakes(idle_worker):
    # One process serves them all: where no NOTIFY reaches it, one look reads every queue.
    others = [f"{WORK_QUEUE}_idle_{i}" for i in range(2)]
    worker = idle_worker(queues=(*others, WORK_QUEUE))
    worker.wait_idle()
    for name in others:
        worker.wait_for(f"queue {name}: idle")
    job_id = JobQueue().enqueue(Job(queue_name=WORK_QUEUE, payload={}))
    wait_completed(job_id)
    assert worker.count(f"queue {WORK_QUEUE}: woken ({woken_by_new_job()})") >= 1
    for name in others:
        assert worker.count(f"queue {name}: woken") == 0


def test_a_job_enqueued_in_a_transaction_wakes_it_at_commit(idle_worker):
    worker = idle_worker()
    worker.wait_idle()
    with transaction.atomic():
        ids = JobQueue().enqueue_many([Job(queue_name=WORK_QUEUE, payload={}) for _ in range(3)])
    for job_id in ids:
        wait_completed(job_id)
    assert worker.count(f"queue {WORK_QUEUE}: woken ({woken_by_new_job()})") >= 1
    assert worker.count(f"queue {WORK_QUEUE}: woken (poll)") == 0


def test_resuming_a_queue_wakes_its_idle_worker(idle_worker):
    queue = JobQueue()
    queue.pause_queue(WORK_QUEUE)
    job_id = queue.enqueue(Job(queue_name=WORK_QUEUE, payload={}))
    worker = idle_worker()
    worker.wait_idle()
    queue.resume_queue(WORK_QUEUE)
    wait_completed(job_id)
    assert worker.count(f"queue {WORK_QUEUE}: woken ({woken_by_new_job()})") >= 1
    assert worker.count(f"queue {WORK_QUEUE}: woken (poll)") == 0


def test_a_scheduled_job_wakes_it_at_its_time(idle_worker):
    worker = idle_worker()
    worker.wait_idle()
    at = timezone.now() + timedelta(seconds=2)
    job_id = JobQueue().enqueue(Job(queue_name=WORK_QUEUE, payload={}, scheduled_at=at))
    wait_completed(job_id)
    job = JobQueue().get_job(job_id)
    assert job.started_at >= at
    assert worker.count(f"queue {WORK_QUEUE}: woken (scheduled)") >= 1
    assert worker.count(f"queue {WORK_QUEUE}: woken (poll)") == 0


def test_a_queue_at_its_rate_wakes_it_when_the_next_window_opens(idle_worker):
    queue = JobQueue()
    queue.queue_config(WORK_QUEUE, rate=(1, 1.0))  # one job a second
    worker = idle_worker()
    worker.wait_idle()
    ids = queue.enqueue_many([Job(queue_name=WORK_QUEUE, payload={}) for _ in range(3)])
    for job_id in ids:
        wait_completed(job_id)
    windows = {int(queue.get_job(job_id).started_at.timestamp()) for job_id in ids}
    assert len(windows) == 3, "more than one job a window"
    # Between the jobs the rate was spent: the worker slept until its next window, not
    # until a check or a NOTIFY (a claim then would have got nothing) nor its 60 s poll. (On
    # a loaded machine a claim may land in the next window already, with no sleep before it:
    # at least one of the two gaps is slept through.)
    assert worker.count(f"queue {WORK_QUEUE}: woken (rate)") >= 1
    assert worker.count(f"queue {WORK_QUEUE}: woken (poll)") == 0


@postgresql_only
def test_a_missed_notify_is_covered_by_the_poll(idle_worker):
    skip_through_a_pooler()
    worker = idle_worker(poll="0.5")
    worker.wait_idle()
    with transaction.atomic(), connection.cursor() as cursor:
        # This transaction's insert sends no NOTIFY (DDL is transactional: only here).
        cursor.execute("ALTER TABLE queues_job DISABLE TRIGGER queues_job_pickup_insert")
        job_id = JobQueue().enqueue(Job(queue_name=WORK_QUEUE, payload={}))
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # no deferred checks left pending
        cursor.execute("ALTER TABLE queues_job ENABLE TRIGGER queues_job_pickup_insert")
    wait_completed(job_id)
    assert worker.count(f"queue {WORK_QUEUE}: woken (poll)") >= 1
    assert worker.count(f"queue {WORK_QUEUE}: woken (notify)") == 0


def _listener_pids() -> list[int]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE application_name = 'hammerweb-pickup' "
            "AND datname = current_database()"
        )
        return [row[0] for row in cursor.fetchall()]


@postgresql_only
def test_the_listener_reconnects_after_its_connection_is_killed(idle_worker):
    skip_through_a_pooler()
    worker = idle_worker()
    worker.wait_idle()
    wait_until(lambda: len(_listener_pids()) == 1, WAIT, "no listener connection")
    [killed] = _listener_pids()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [killed])
    # Back, it wakes its worker once (what was sent meanwhile is lost), which sleeps again.
    worker.wait_for(f"queue {WORK_QUEUE}: woken (reconnect)")
    [listening] = _listener_pids()
    assert listening != killed
    job_id = JobQueue().enqueue(Job(queue_name=WORK_QUEUE, payload={}))
    wait_completed(job_id)
    assert worker.count(f"queue {WORK_QUEUE}: woken (notify)") >= 1
    assert worker.count(f"queue {WORK_QUEUE}: woken (poll)") == 0
