"""`runworker --log-format json --log-jobs` in a child process, on the test database: every
line it writes to stderr is one JSON object, and each job event carries the job's id, queue,
attempt, run time and outcome; with --processes the children log the same way."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from queues.api import Job, JobQueue, JobStatus
from tests.conftest import ROOT
from tests.workers.support.subprocess_jobs import WORK_QUEUE, explode

BASE_DIR = ROOT
JSON_ARGS = ["--burst", "--log-format", "json", "--log-jobs", "--poll-interval", "0.05",
             "--include", "tests.workers.support.subprocess_jobs"]  # fmt: skip

pytestmark = pytest.mark.django_db(transaction=True)


def run_json(tmp_path: Path, *args: str) -> tuple[int, list[dict]]:
    """Run runworker to its end; its exit code and its stderr's lines, each parsed."""
    err = tmp_path / "stderr.log"
    env = {**os.environ, "HAMMERWEB_USE_TEST_DB": "1", "PYTHONUNBUFFERED": "1",
           "DJANGO_DEBUG": "0"}  # fmt: skip
    with open(err, "w") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "manage.py", "runworker", WORK_QUEUE, *JSON_ARGS, *args],
            cwd=BASE_DIR, env=env, stdout=subprocess.DEVNULL, stderr=stderr,
        )  # fmt: skip
        try:
            code = proc.wait(90)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise AssertionError(f"runworker did not exit:\n{err.read_text()}") from None
    lines = err.read_text().splitlines()
    assert lines, "runworker logged nothing"
    parsed = []
    for line in lines:
        try:
            parsed.append(json.loads(line))
        except ValueError:
            raise AssertionError(f"not a JSON line: {line!r}") from None
    return code, parsed


def events_of(lines: list[dict], job_id) -> list[dict]:
    return [line for line in lines if line.get("job_id") == str(job_id)]


def test_every_line_is_json_and_job_events_carry_their_fields(tmp_path):
    queue = JobQueue()
    ok = queue.enqueue(Job(queue_name=WORK_QUEUE, payload={"seconds": 0.01}))
    failure = explode.enqueue("boom")
    code, lines = run_json(tmp_path, "--batch-size", "4")
    assert code == 0
    for line in lines:
        assert {"timestamp", "level", "logger", "message", "process"} <= line.keys(), line
        assert line["timestamp"].endswith("+00:00")
    started, succeeded = [e for e in events_of(lines, ok) if e["logger"] == "workers.jobs"]
    assert (started["outcome"], started["attempt"], started["queue"]) == ("started", 1, WORK_QUEUE)
    assert (succeeded["outcome"], succeeded["status"], succeeded["level"]) == (
        "succeeded", JobStatus.COMPLETED, "INFO",
    )  # fmt: skip
    assert 0.01 <= succeeded["run_time"] < 30
    assert succeeded["message"].startswith(f"job {ok} of {WORK_QUEUE} succeeded (attempt 1) in ")
    failed = [e for e in events_of(lines, failure.id) if e.get("outcome") == "failed"]
    assert failed and all("boom" in e["error"] for e in failed)
    assert queue.get_job(ok).status == JobStatus.COMPLETED


def test_supervised_children_log_json_too(tmp_path):
    queue = JobQueue()
    ids = queue.enqueue_many([Job(queue_name=WORK_QUEUE, payload={"i": i}) for i in range(6)])
    code, lines = run_json(tmp_path, "--processes", "2", "--batch-size", "2")
    assert code == 0
    starts = [line for line in lines if line["message"].startswith("started worker process")]
    assert len(starts) == 2
    supervisor = starts[0]["process"]
    done = {e["job_id"]: e for e in lines if e.get("outcome") == "succeeded"}
    assert set(done) == {str(job_id) for job_id in ids}
    assert supervisor not in {e["process"] for e in done.values()}, "run by the children"
    assert all(isinstance(e["run_time"], float) and e["attempt"] == 1 for e in done.values())


def test_an_unknown_log_format_is_a_clear_error():
    from django.core.management import call_command
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="invalid choice: 'xml'"):
        call_command("runworker", WORK_QUEUE, "--log-format", "xml", "--burst")
