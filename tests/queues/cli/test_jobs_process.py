"""`manage.py jobs` as an operator runs it: a child process on the test database, its JSON
read back, its exit codes, and a bad value as one line on stderr (no traceback)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from queues.api import JobOutcome
from queues.models import Job as Row
from tests.conftest import unique_queue
from tests.queues.support.jobs_helpers import finished, queue_days_ago, snapshot

BASE_DIR = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.django_db(transaction=True)


def manage_jobs(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HAMMERWEB_USE_TEST_DB": "1"}
    return subprocess.run(
        [sys.executable, "manage.py", "jobs", *args],
        cwd=BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def test_list_purge_and_a_bad_value_in_a_child_process():
    name = unique_queue("cli_proc")
    ids = finished(queue_days_ago(10), name, 3, JobOutcome.dead("no"))

    listed = manage_jobs("list", "--queue", name, "--json")
    assert listed.returncode == 0, listed.stderr
    assert sorted(job["id"] for job in json.loads(listed.stdout)) == sorted(map(str, ids))

    before = snapshot()
    unconfirmed = manage_jobs("purge", "--older-than", "7d", "--queue", name)
    assert unconfirmed.returncode == 1
    assert unconfirmed.stderr.strip() == (
        "CommandError: purge 3 jobs: add --yes to go ahead, or --dry-run to see what it does"
    )
    bad = manage_jobs("purge", "--older-than", "a week")
    assert bad.returncode == 1 and "Traceback" not in bad.stderr
    assert "is not a duration" in bad.stderr
    assert snapshot() == before

    done = manage_jobs("purge", "--older-than", "7d", "--queue", name, "--yes")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "deleted 3 jobs"
    assert not Row.objects.filter(queue_name=name).exists()
