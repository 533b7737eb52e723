"""`manage.py runworker` in subprocesses, on the test database: burst, drain on SIGTERM,
force on a second SIGTERM, `kill -9` mid-batch then the reaper, supervised processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from uuid import UUID

import pytest
from django.core.management import get_commands
from django.db import connection
from django.tasks.base import TaskResultStatus

from queues.api import Job, JobPriority, JobQueue, JobStatus
from queues.models import WorkerProcess
from tests.conftest import ROOT
from tests.pgbouncer.pooling import skip_through_a_pooler
from tests.workers.support.helpers import wait_for_status, wait_until
from tests.workers.support.subprocess_jobs import WORK_QUEUE, explode, multiply, multiply_async

BASE_DIR = ROOT
FAST = ["--poll-interval", "0.05", "--include", "tests.workers.support.subprocess_jobs"]

pytestmark = pytest.mark.django_db(transaction=True)


class RunWorker:
    """`manage.py runworker ARGS` on the test database, output in a file."""

    def __init__(self, tmp_path: Path, *args: str, env: dict | None = None) -> None:
        self.output = tmp_path / f"runworker-{time.monotonic_ns()}.log"
        # DEBUG on: Django's django.tasks log receivers print their lines only then.
        env = {**os.environ, "HAMMERWEB_USE_TEST_DB": "1", "PYTHONUNBUFFERED": "1",
               "DJANGO_DEBUG": "1", **(env or {})}
        with open(self.output, "w") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "manage.py", "runworker", *args, *FAST],
                cwd=BASE_DIR,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                # Its own process group, so that stop() reaches the children of
                # --processes too: killed alone, the supervisor leaves them draining for
                # up to a second, and their writes then deadlock with the test's flush.
                start_new_session=True,
            )

    def text(self) -> str:
        return self.output.read_text()

    def wait(self, timeout: float = 60) -> int:
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"runworker did not exit:\n{self.text()}") from None

    def signal(self, signum: int) -> None:
        self.proc.send_signal(signum)

    def stop(self) -> None:
        """Kill the supervisor and every child it started, and wait until they are gone.
        Each child has a process group of its own: it is found by its parent while the
        supervisor is stopped (it starts no other meanwhile), and killed with its group."""
        groups = [self.proc.pid]
        try:
            os.killpg(self.proc.pid, signal.SIGSTOP)
            groups += [pid for pid, (_, ppid, _) in processes().items() if ppid == self.proc.pid]
        except ProcessLookupError:
            pass  # the group is empty: everything exited
        for group in groups:
            try:
                os.killpg(group, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait()
        wait_until(
            lambda: not any(live_members(group) for group in groups),
            10,
            "the children outlived SIGKILL",
        )


def processes() -> dict[int, tuple[str, int, int]]:
    """Every process: its state, parent and process group."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue  # not a process
        try:
            # Fields after the command's closing parenthesis: state, ppid, pgrp.
            state, ppid, pgrp = (entry / "stat").read_text().rsplit(")", 1)[1].split()[:3]
        except OSError:
            continue  # it just exited
        found[int(entry.name)] = (state, int(ppid), int(pgrp))
    return found


def live_members(group: int) -> list[int]:
    """The processes of a process group that are not yet zombies (a zombie holds no
    connection; this machine's init reaps orphans only every second or two)."""
    return [pid for pid, (state, _, pgrp) in processes().items() if pgrp == group and state != "Z"]


@pytest.fixture
def runworker(tmp_path):
    started: list[RunWorker] = []

    def start(*args: str) -> RunWorker:
        run = RunWorker(tmp_path, *args)
        started.append(run)
        return run

    yield start
    for run in started:
        run.stop()


def log_lines(path: Path) -> list[list[str]]:
    return [line.split() for line in path.read_text().splitlines()] if path.exists() else []


def enqueue_work(
    count: int,
    log: Path | None = None,
    seconds: float = 0.0,
    gate: Path | None = None,
    priority: JobPriority = JobPriority.NORMAL,
) -> list:
    payload: dict = {"seconds": seconds}
    if log:
        payload["log"] = str(log)
    if gate:
        payload["gate"] = str(gate)
    jobs = [Job(queue_name=WORK_QUEUE, payload=payload, priority=priority) for _ in range(count)]
    return JobQueue().enqueue_many(jobs)


def test_our_runworker_wins_over_channels():
    assert get_commands()["runworker"] == "workers"


def test_burst_runs_every_job_and_task_then_exits_zero(runworker, tmp_path):
    log = tmp_path / "jobs.log"
    ids = enqueue_work(30, log)
    product = multiply.enqueue(6, 7)
    product_async = multiply_async.enqueue(3, 5)
    failure = explode.enqueue("boom")

    run = runworker(WORK_QUEUE, "--burst", "--batch-size", "8", "--concurrency", "3")
    assert run.wait() == 0, run.text()

    queue = JobQueue()
    counts = queue.get_job_counts_by_status(WORK_QUEUE)
    assert counts["Completed"] == 32 and counts["Dead"] == 1, counts
    done = Counter(parts[1] for parts in log_lines(log) if parts[0] == "done")
    assert done == Counter({str(job_id): 1 for job_id in ids})
    assert "processed 33 jobs (32 completed, 1 failed)" in run.text()
    assert not WorkerProcess.objects.exists(), "the process row outlived a clean exit"

    # Results read back in this process.
    result = multiply.get_result(product.id)
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.return_value == 42
    assert result.attempts == 1
    assert multiply_async.get_result(product_async.id).return_value == {"product": 15}
    failed = explode.get_result(failure.id)
    assert failed.status == TaskResultStatus.FAILED
    assert failed.errors[0].exception_class is ValueError
    assert "boom" in failed.errors[0].traceback
    # Django's task_started/task_finished log receivers ran in the worker.
    assert f"Task id={product.id} path={multiply.module_path} state=SUCCESSFUL" in run.text()


def test_sigterm_releases_held_jobs_and_lets_the_running_one_finish(runworker, tmp_path):
    log, gate = tmp_path / "jobs.log", tmp_path / "gate"
    ids = enqueue_work(6, log, gate=gate)
    run = runworker(WORK_QUEUE, "--batch-size", "4", "--concurrency", "1")
    wait_until(lambda: log_lines(log), 30, "no job started")
    wait_for_status(JobQueue(), WORK_QUEUE, "Running", 4, 10)
    row = WorkerProcess.objects.get()
    assert (row.pid, row.queues, row.batch_size) == (run.proc.pid, [WORK_QUEUE], 4)

    run.signal(signal.SIGTERM)
    wait_until(lambda: "draining" in run.text(), 10, "the SIGTERM was not handled")
    gate.touch()  # the running job may finish now, within the grace period
    assert run.wait() == 0, run.text()

    started = {parts[1] for parts in log_lines(log) if parts[0] == "start"}
    assert len(started) == 1
    for job_id in ids:
        job = JobQueue().get_job(job_id)
        if str(job_id) in started:
            assert job.status == JobStatus.COMPLETED
        else:
            assert (job.status, job.attempts, job.started_at) == (JobStatus.PENDING, 0, None)
    assert not WorkerProcess.objects.exists()


def test_a_second_sigterm_forces_the_exit(runworker, tmp_path):
    log = tmp_path / "jobs.log"
    (job_id,) = enqueue_work(1, log, seconds=120)
    run = runworker(WORK_QUEUE, "--grace-period", "120")
    wait_until(lambda: log_lines(log), 30, "no job started")
    run.signal(signal.SIGTERM)
    wait_until(lambda: "draining" in run.text(), 10, "the first SIGTERM was not handled")
    run.signal(signal.SIGTERM)
    assert run.wait(30) == 1, run.text()
    # The job stays Running on its lease; the reaper takes it back when the lease expires.
    assert JobQueue().get_job(job_id).status == JobStatus.RUNNING
    assert not WorkerProcess.objects.exists()


def test_kill_9_mid_batch_then_the_reaper_loses_no_job(runworker, tmp_path):
    log, gate = tmp_path / "jobs.log", tmp_path / "gate"
    # The first batch (the High jobs) runs through; of the second, two jobs wait at the gate
    # and one or two more are held when the worker is killed (slots take their next job as
    # they hand in an outcome, so a claim can come before every write is done and be small).
    # The first jobs take 50 ms: jobs that long are claimed a batch ahead (shorter ones only
    # for the idle slots, and none would be held while both slots wait at the gate).
    first = enqueue_work(4, log, seconds=0.05, priority=JobPriority.HIGH)
    ids = first + enqueue_work(8, log, gate=gate)
    run = runworker(WORK_QUEUE, "--batch-size", "4", "--concurrency", "2", "--lease", "2")
    queue = JobQueue()

    def mid_batch():
        counts = queue.get_job_counts_by_status(WORK_QUEUE)
        starts = [parts for parts in log_lines(log) if parts[0] == "start"]
        return counts["Completed"] == 4 and counts["Running"] >= 3 and len(starts) == 6

    wait_until(mid_batch, 30, "the worker never got mid-batch")
    run.proc.kill()
    run.proc.wait()
    gate.touch()

    interrupted = {j.id for j in Job.objects.filter(queue_name=WORK_QUEUE, status="Running")}
    started = {UUID(parts[1]) for parts in log_lines(log) if parts[0] == "start"}
    assert len(interrupted) in (3, 4) and not interrupted & set(first)
    assert len(interrupted & started) == 2, "two jobs were at the gate"
    # The reaper takes them back once their 2 s lease has expired (the reaper schedules
    # them at its own `now`, so a moved MockClock would hold them in the future).
    requeued: set = set()

    def reaped_all():
        recovery = queue.requeue_stale_jobs()
        assert not recovery.dead
        requeued.update(recovery.requeued)
        return requeued >= interrupted

    wait_until(reaped_all, 30, "the reaper did not take the jobs back")
    assert requeued == interrupted
    for job_id in interrupted:
        job = queue.get_job(job_id)
        assert (job.status, job.attempts) == (JobStatus.PENDING, 1), "attempt not counted"

    rerun = runworker(WORK_QUEUE, "--burst", "--batch-size", "4", "--concurrency", "2")
    assert rerun.wait() == 0, rerun.text()
    lines = log_lines(log)
    done = Counter(parts[1] for parts in lines if parts[0] == "done")
    starts = Counter(parts[1] for parts in lines if parts[0] == "start")
    for job_id in ids:
        job = queue.get_job(job_id)
        assert job.status == JobStatus.COMPLETED, f"job {job_id} lost: {job.status}"
        # A job interrupted by the kill counted that attempt, run or only held.
        assert job.attempts == (2 if job_id in interrupted else 1)
        assert done[str(job_id)] == 1, f"job {job_id} completed {done[str(job_id)]} times"
    # The two at the gate ran again; the held ones ran once.
    for job_id in interrupted:
        assert starts[str(job_id)] == (2 if job_id in started else 1)


def test_supervised_processes_restart_a_dead_child(runworker):
    run = runworker(WORK_QUEUE, "--processes", "2")
    wait_until(lambda: WorkerProcess.objects.count() == 2, 30, "two children did not start")
    first = set(WorkerProcess.objects.values_list("pid", flat=True))
    assert run.proc.pid not in first
    victim = min(first)
    os.kill(victim, signal.SIGKILL)
    wait_until(
        lambda: set(WorkerProcess.objects.values_list("pid", flat=True)) - first,
        30,
        "the dead child was not replaced",
    )
    run.signal(signal.SIGTERM)
    assert run.wait() == 0, run.text()
    # Children exited cleanly and removed their rows; the killed child's row is left for
    # the pruner.
    assert set(WorkerProcess.objects.values_list("pid", flat=True)) == {victim}


def test_supervised_processes_in_burst_mode(runworker, tmp_path):
    log = tmp_path / "jobs.log"
    ids = enqueue_work(20, log)
    run = runworker(WORK_QUEUE, "--processes", "2", "--burst", "--batch-size", "3")
    assert run.wait() == 0, run.text()
    done = Counter(parts[1] for parts in log_lines(log) if parts[0] == "done")
    assert done == Counter({str(job_id): 1 for job_id in ids})


@pytest.mark.pgrestart
@pytest.mark.dbrestart
@pytest.mark.skipif(connection.vendor != "postgresql", reason="restarts PostgreSQL")
def test_worker_carries_on_through_a_postgresql_restart(runworker, tmp_path):
    """The server is shared: one short restart, while a worker is busy."""
    skip_through_a_pooler()
    log = tmp_path / "jobs.log"
    ids = enqueue_work(40, log, seconds=0.05)
    # A claim whose reply was lost in the restart comes back through the reaper, hence
    # the short lease and reaper interval.
    run = runworker(
        WORK_QUEUE,
        "--batch-size",
        "4",
        "--concurrency",
        "2",
        "--lease",
        "3",
        "--reaper-interval",
        "1",
    )
    queue = JobQueue()
    wait_until(
        lambda: queue.get_job_counts_by_status(WORK_QUEUE)["Completed"] >= 5,
        30,
        "the worker did not start",
    )
    major = connection.cursor().connection.info.server_version // 10000
    subprocess.run(
        ["pg_ctlcluster", "--skip-systemctl-redirect", str(major), "main", "restart"],
        check=True,
        timeout=120,
    )
    connection.close()  # ours died with the server too
    wait_for_status(queue, WORK_QUEUE, "Completed", 40, 90)
    assert run.proc.poll() is None, f"the worker died:\n{run.text()}"
    run.signal(signal.SIGTERM)
    assert run.wait() == 0, run.text()
    assert "database fault" in run.text()
    done = Counter(parts[1] for parts in log_lines(log) if parts[0] == "done")
    assert set(done) == {str(job_id) for job_id in ids}


def test_children_drain_and_exit_when_the_supervisor_dies(runworker):
    run = runworker(WORK_QUEUE, "--processes", "2")
    wait_until(lambda: WorkerProcess.objects.count() == 2, 30, "two children did not start")
    children = list(WorkerProcess.objects.values_list("pid", flat=True))
    run.proc.kill()
    run.proc.wait()
    try:
        # The orphans notice, drain and remove their rows on their clean exit.
        wait_until(lambda: not WorkerProcess.objects.exists(), 30, "orphaned children run on")
    finally:
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass  # gone, as it should be
