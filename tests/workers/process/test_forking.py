"""`runworker --processes N` forks its children from the set-up supervisor: each child opens
database connections of its own (none of the supervisor's crosses the fork, not even one a
handlers' module opened at import), a SIGKILLed child's job is handed back at once by a
process forked for it while the supervisor runs no thread, a clean drain exits through the
project's atexit hooks; where forking is unsafe (a thread runs) or not wanted (--spawn),
the children start as new interpreters and do the same work."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest
from django.db import connection

from queues.api import Job, JobQueue, JobStatus
from queues.models import ReaperRun, WorkerProcess
from tests.workers.process.fork_jobs import FORK_QUEUE, LOG_ENV, THREAD_ENV, THREAD_NAME
from tests.workers.runworker.test_runworker import RunWorker
from tests.workers.support.helpers import wait_until
from tests.workers.support.processes import live_workers

pytestmark = pytest.mark.django_db(transaction=True)
INCLUDE = ["--include", "tests.workers.process.fork_jobs"]


@pytest.fixture
def runworker(tmp_path):
    started: list[RunWorker] = []
    log = tmp_path / "fork.log"

    def start(*args: str, env: dict | None = None) -> RunWorker:
        run = RunWorker(
            tmp_path, FORK_QUEUE, *args, *INCLUDE, env={LOG_ENV: str(log), **(env or {})}
        )
        run.log = log
        started.append(run)
        return run

    yield start
    for run in started:
        run.stop()


def lines(log: Path, kind: str) -> list[list[str]]:
    if not log.exists():
        return []
    return [line.split()[1:] for line in log.read_text().splitlines() if line.split()[0] == kind]


def threads_of(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


def test_forked_children_open_connections_of_their_own_and_exit_cleanly(runworker):
    ids = JobQueue().enqueue_many([Job(queue_name=FORK_QUEUE) for _ in range(20)])
    run = runworker("--processes", "2", "--burst", "--batch-size", "2")
    assert run.wait() == 0, run.text()

    text = run.text()
    assert text.count(", forked)") == 2, text
    assert {JobQueue().get_job(job_id).status for job_id in ids} == {JobStatus.COMPLETED}
    opened = defaultdict(list)  # pid: [(thread, server id)]
    for pid, thread, server_id in lines(run.log, "connection"):
        opened[int(pid)].append((thread, server_id))
    supervisor = run.proc.pid
    # The supervisor's own, opened when it imported the handlers' module before forking.
    assert opened[supervisor][0][0] == "MainThread", opened
    children = {int(pid) for pid in re.findall(r"started worker process \d \(pid (\d+)", text)}
    assert len(children) == 2 and supervisor not in children, text
    for child in children:
        # The child's main thread (it registers the process row) opened a connection: the
        # supervisor's, closed before the fork, was not carried on.
        assert "MainThread" in {thread for thread, _ in opened[child]}, opened
    if connection.vendor != "sqlite":  # a server's ids: no connection is in two processes
        owners = defaultdict(set)  # the hand-backs' forked processes among them
        for pid, pairs in opened.items():
            for _, server_id in pairs:
                owners[server_id].add(pid)
        assert all(len(pids) == 1 for pids in owners.values()), opened
    # Each process left through the project's atexit hooks, its output written out.
    exits = {int(pid) for (pid,) in lines(run.log, "atexit")}
    assert exits >= {supervisor, *children}, exits
    assert text.count("runworker: processed ") == 2, text
    assert not WorkerProcess.objects.exists(), "a process row outlived a clean exit"


def test_a_sigkilled_forked_child_has_its_job_handed_back_at_once(runworker, tmp_path):
    gate = tmp_path / "gate"
    queue = JobQueue()
    job_id = queue.enqueue(Job(queue_name=FORK_QUEUE, payload={"gate": str(gate)}))
    # One job at a time per child, on the default 300 s lease: only the lifeline can bring
    # it back within the test.
    run = runworker("--processes", "2", "--batch-size", "1", "--concurrency", "1")
    wait_until(lambda: lines(run.log, "start"), 30, "the job did not start")
    ((victim, _),) = lines(run.log, "start")
    assert int(victim) in live_workers(run.proc.pid)
    assert threads_of(run.proc.pid) == 1, "the supervisor runs a thread: forking is unsafe"

    os.kill(int(victim), signal.SIGKILL)
    wait_until(lambda: len(lines(run.log, "start")) == 2, 30, "the job was not handed back")
    assert lines(run.log, "start")[1][0] != victim
    (handed,) = ReaperRun.objects.filter(ran_by__startswith="supervisor:")
    assert handed.requeued_ids == [str(job_id)]
    assert queue.get_job(job_id).attempts == 2
    assert threads_of(run.proc.pid) == 1, "the hand-back ran in a thread of the supervisor"

    wait_until(lambda: len(live_workers(run.proc.pid)) == 2, 30, "no child replaced it")
    gate.touch()
    wait_until(lambda: queue.get_job(job_id).status == JobStatus.COMPLETED, 30, "not done")
    run.signal(signal.SIGTERM)
    assert run.wait() == 0, run.text()
    assert "killed by SIGKILL" in queue.get_job_attempts(job_id)[0].error


@pytest.mark.parametrize("how", ["--spawn", "thread"])
def test_children_start_as_new_interpreters_where_forking_is_refused(runworker, how):
    ids = JobQueue().enqueue_many([Job(queue_name=FORK_QUEUE) for _ in range(10)])
    args = ["--spawn"] if how == "--spawn" else []
    run = runworker(
        "--processes", "2", "--burst", *args, env={THREAD_ENV: "1"} if how == "thread" else {}
    )
    assert run.wait() == 0, run.text()

    text = run.text()
    assert text.count("started worker process ") == 2 and ", forked)" not in text, text
    if how == "thread":
        assert f"start as new interpreters: threads run in this process ({THREAD_NAME})" in text
    assert {JobQueue().get_job(job_id).status for job_id in ids} == {JobStatus.COMPLETED}


FORK_AND_STOP = """
import os, signal, sys, time
import django
from django.conf import settings
settings.configure()
django.setup()
from workers.process.forking import fork

# The parent's own drain: run in the child, it would show as the child's exit code.
signal.signal(signal.SIGTERM, lambda *_: os._exit(99))
on_stop = signal.SIG_IGN if sys.argv[1] == "ignore" else signal.SIG_DFL
pid = fork(lambda: time.sleep(float(sys.argv[2])) or 0, own_group=True, on_stop=on_stop)
os.kill(pid, signal.SIGTERM)  # before the child can have installed handlers of its own
_, status = os.waitpid(pid, 0)
print(os.waitstatus_to_exitcode(status))
"""


@pytest.mark.parametrize(
    ("on_stop", "ends"),
    [("default", -signal.SIGTERM), ("ignore", 0)],
)
def test_a_stop_that_reaches_a_child_before_its_handlers_is_not_lost(tmp_path, on_stop, ends):
    """A SIGTERM sent the moment a child is forked never runs the parent's handler in the
    child (which would set the parent's event there, and the child would never drain): it
    ends the child, or, for a hand-back that ignores stops, does nothing (the parent's
    handler, run in the child, would end it with 99). Twenty forks, each signalled at once."""
    script = tmp_path / "fork_and_stop.py"
    script.write_text(FORK_AND_STOP)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[3])}
    for _ in range(20):
        done = subprocess.run(
            [sys.executable, str(script), on_stop, "0.3" if on_stop == "ignore" else "30"],
            env=env,
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        )
        assert done.stdout.split() == [str(ends)], done.stderr
