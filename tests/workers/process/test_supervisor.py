"""`runworker --processes N` started from another directory: its children run with the
parent's sys.path, settings and working directory; a child that cannot start makes the
supervisor give up with its error instead of restarting it for ever."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from queues.api import Job, JobQueue, JobStatus
from tests.conftest import ROOT

MANAGE = ROOT / "manage.py"

pytestmark = pytest.mark.django_db(transaction=True)

HANDLERS = '''
import os
from workers.api import job_handler

@job_handler("{queue}")
def where(job):
    return {{"cwd": os.getcwd(), "pid": os.getpid()}}
'''


def supervise(cwd: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """`python /abs/manage.py runworker ARGS` in `cwd`, on the test database."""
    env = {**os.environ, "HAMMERWEB_USE_TEST_DB": "1", "PYTHONUNBUFFERED": "1"}
    return subprocess.run(
        [sys.executable, str(MANAGE), "runworker", *args, "--poll-interval", "0.05"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_children_get_the_parents_sys_path_and_working_directory(tmp_path):
    # The handlers' module is importable only through the parent's --pythonpath, which is
    # not passed on as an argument: the children must get the parent's sys.path.
    queue_name = f"where_{os.getpid()}_{time.monotonic_ns()}"
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "where_handlers.py").write_text(HANDLERS.format(queue=queue_name))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    ids = JobQueue().enqueue_many([Job(queue_name=queue_name) for _ in range(12)])

    run = supervise(
        elsewhere, queue_name, "--processes", "2", "--burst", "--batch-size", "2",
        "--pythonpath", str(extra), "--include", "where_handlers",
    )

    assert run.returncode == 0, run.stderr
    jobs = [JobQueue().get_job(job_id) for job_id in ids]
    assert {job.status for job in jobs} == {JobStatus.COMPLETED}, run.stderr
    assert {job.result["cwd"] for job in jobs} == {str(elsewhere)}
    assert os.getpid() not in {job.result["pid"] for job in jobs}


def test_a_child_that_cannot_start_makes_the_supervisor_give_up(tmp_path):
    began = time.monotonic()
    run = supervise(
        tmp_path, "nothing_here", "--processes", "2", "--include", "no_such_module_here",
        timeout=90,
    )

    assert run.returncode == 1, run.stderr
    # Its error, in the supervisor's own last words.
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith("CommandError: worker process "), run.stderr
    assert "could not start (exit code 1)" in last
    assert "cannot import no_such_module_here" in last
    # Two children started once each, none again: no restart loop.
    assert run.stderr.count("started worker process") == 2, run.stderr
    assert "restarting" not in run.stderr
    assert time.monotonic() - began < 60
