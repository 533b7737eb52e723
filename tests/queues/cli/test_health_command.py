"""`manage.py hammerweb health`: its thresholds passing and failing, and its exit codes as a
probe sees them (a child process, the database reachable or not)."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from queues.api import Job, JobQueue
from queues.models import WorkerProcess
from tests.conftest import unique_queue

BASE_DIR = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.django_db


def health(*args: str) -> tuple[int, str]:
    """(exit code, what it wrote) of the command run in this process."""
    out = StringIO()
    try:
        call_command("hammerweb", "health", *args, stdout=out, stderr=out)
    except SystemExit as exc:
        return exc.code, out.getvalue()
    return 0, out.getvalue()


def manage(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=BASE_DIR,
        env={**os.environ, "HAMMERWEB_USE_TEST_DB": "1", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def pending(name: str, count: int, due_ago: timedelta = timedelta(0)) -> None:
    at = timezone.now() - due_ago
    JobQueue().enqueue_many([
        Job(queue_name=name, payload={}, scheduled_at=at) for _ in range(count)
    ])


def test_backlog_threshold():
    name = unique_queue("backlog")
    pending(name, 3)
    assert health("--queue", name, "--max-backlog", "3") == (0, "healthy\n")
    code, text = health("--queue", name, "--max-backlog", "2")
    assert code == 1 and text == f"queue {name}: 3 jobs pending (at most 2 allowed)\n"


def test_due_age_threshold():
    name = unique_queue("due")
    pending(name, 1, due_ago=timedelta(minutes=2))
    assert health("--queue", name, "--max-due-age", "300")[0] == 0
    code, text = health("--queue", name, "--max-due-age", "60")
    assert code == 1 and text.startswith(f"queue {name}: its oldest due job has waited 12")
    assert text.endswith("s (at most 60s allowed)\n")


def test_a_queue_without_a_live_worker():
    worked, idle = unique_queue("worked"), unique_queue("idle")
    WorkerProcess.objects.create(hostname="h", pid=1, queues=[worked])
    stale = timezone.now() - timedelta(minutes=5)
    WorkerProcess.objects.create(hostname="h", pid=2, queues=[idle], last_heartbeat_at=stale)
    assert health("--queue", worked, "--require-worker")[0] == 0
    code, text = health("--queue", worked, "--queue", idle, "--require-worker")
    assert code == 1 and text == f"queue {idle}: no live worker process\n"


def test_without_a_list_only_queues_with_pending_jobs_need_a_worker():
    name = unique_queue("waiting")
    assert health("--require-worker")[0] == 0
    pending(name, 1)
    code, text = health("--require-worker")
    assert code == 1 and f"queue {name}: no live worker process\n" in text


@pytest.mark.parametrize("args", [["--max-backlog", "-1"], ["--max-due-age", "soon"],
                                  ["--queue", ""], ["--max-due-age", "nan"], []])
def test_bad_arguments_are_refused(args):
    with pytest.raises(CommandError):
        call_command("hammerweb", *(["health", *args] if args else []))


@pytest.mark.django_db(transaction=True)
def test_exit_codes_seen_by_a_probe():
    name = unique_queue("probe")
    pending(name, 2)
    ok = manage("hammerweb", "health", "--queue", name, "--max-backlog", "5")
    assert (ok.returncode, ok.stdout) == (0, "healthy\n"), ok.stderr
    bad = manage("hammerweb", "health", "--queue", name, "--max-backlog", "1")
    assert bad.returncode == 1
    assert bad.stderr == f"queue {name}: 2 jobs pending (at most 1 allowed)\n"
    usage = manage("hammerweb", "health", "--max-backlog", "x")
    assert usage.returncode == 2 and "is not a whole number" in usage.stderr


def test_exit_code_3_when_the_database_does_not_answer(vendor):
    # A real fault: a server that is not there (a closed port), or an SQLite file that
    # cannot be opened.
    url = {
        "postgresql": "postgres://root@127.0.0.1:1/hammerweb",
        "mysql": "mysql://root@127.0.0.1:1/hammerweb",
    }.get(vendor, "sqlite:////nonexistent-folder/hammerweb.sqlite3")
    down = manage("hammerweb", "health", DATABASE_URL=url, HAMMERWEB_USE_TEST_DB="0")
    assert down.returncode == 3, down.stderr
    assert down.stderr.startswith("database 'default' does not answer: "), down.stderr
