"""`runworker` in this process: argument checks, burst, the WorkerProcess row."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import threading
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command

from queues.api import Job, JobQueue
from queues.models import WorkerProcess
from tests.conftest import ROOT, unique_queue
from tests.workers.support.helpers import wait_for_status, wait_until
from workers.process.host import ProcessSettings, WorkerProcessRuntime
from workers.registry import job_handler, unregister


@pytest.mark.parametrize(
    "args",
    [
        ["q", "--batch-size", "0"],
        ["q", "--concurrency", "x"],
        ["q", "--lease", "0"],
        ["q", "--poll-interval", "-1"],
        ["q", "--prune-after", "-1"],
        ["q", "--processes", "0"],
        ["bad\x00name"],
        ["q", "--include", "no.such.module"],
    ],
)
def test_bad_arguments_are_refused(args):
    with pytest.raises(CommandError):
        call_command("runworker", *args)


@pytest.mark.django_db(transaction=True)
def test_burst_in_process_prints_a_summary():
    name = unique_queue("cmd")
    JobQueue().enqueue_many([Job(queue_name=name, payload={"n": n}) for n in range(5)])
    job_handler(name)(lambda job: job.payload["n"])
    out = io.StringIO()
    try:
        call_command(
            "runworker",
            name,
            "--burst",
            "--poll-interval",
            "0.02",
            "--batch-size",
            "2",
            stdout=out,
        )
    finally:
        unregister(name)
    assert "processed 5 jobs (5 completed, 0 failed)" in out.getvalue()
    assert JobQueue().get_job_counts_by_status(name)["Completed"] == 5
    assert not WorkerProcess.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_the_process_row_shows_held_and_running_jobs():
    name = unique_queue("row")
    queue = JobQueue()
    queue.enqueue_many([Job(queue_name=name) for _ in range(3)])
    gate = threading.Event()
    settings = ProcessSettings(
        queues=[name],
        batch_size=3,
        concurrency=1,
        poll_interval=timedelta(milliseconds=20),
        heartbeat_interval=timedelta(milliseconds=50),
        handler=lambda job: gate.wait(30),
    )
    runtime = WorkerProcessRuntime(settings)
    stop, force = threading.Event(), threading.Event()
    thread = threading.Thread(target=runtime.run, args=(stop, force))
    thread.start()
    try:

        def counts():
            row = WorkerProcess.objects.first()
            return row and (row.jobs_held, row.jobs_running, row.jobs_processed)

        wait_until(lambda: counts() == (2, 1, 0), 30, "row never showed 2 held, 1 running")
        row = WorkerProcess.objects.get()
        assert row.queues == [name] and row.batch_size == 3 and row.concurrency == 1
        assert row.settings["queue"] == name
        before = row.last_heartbeat_at
        gate.set()
        wait_for_status(queue, name, "Completed", 3, 30)
        wait_until(lambda: counts() == (0, 0, 3), 30, "the row did not catch up")
        assert WorkerProcess.objects.get().last_heartbeat_at > before
    finally:
        gate.set()
        stop.set()
        thread.join(30)
    assert not thread.is_alive()
    assert not WorkerProcess.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_process_whose_row_was_pruned_registers_again_at_its_next_heartbeat():
    name = unique_queue("reregister")
    settings = ProcessSettings(
        queues=[name],
        poll_interval=timedelta(milliseconds=20),
        heartbeat_interval=timedelta(milliseconds=50),
        handler=lambda job: None,
    )
    runtime = WorkerProcessRuntime(settings)
    stop, force = threading.Event(), threading.Event()
    thread = threading.Thread(target=runtime.run, args=(stop, force))
    thread.start()
    try:
        wait_until(lambda: WorkerProcess.objects.exists(), 30, "the process never registered")
        first = WorkerProcess.objects.get()
        # As the pruner does with a process that missed its heartbeats while the database
        # was away: the row goes, the process lives on.
        WorkerProcess.objects.filter(id=first.id).delete()
        wait_until(
            lambda: WorkerProcess.objects.filter(id=first.id).exists(),
            30,
            "the process never registered again",
        )
        again = WorkerProcess.objects.get()
        assert (again.hostname, again.pid, again.queues) == (first.hostname, first.pid, [name])
        assert again.last_heartbeat_at >= first.last_heartbeat_at
    finally:
        stop.set()
        thread.join(30)
    assert not thread.is_alive()
    assert not WorkerProcess.objects.exists()


def _empty_database(tmp_path) -> tuple[str, object]:
    """A URL of a database that answers but was never migrated, on this suite's server,
    and how to drop it."""
    from django.db import connection

    if connection.vendor == "sqlite":
        return f"sqlite:///{tmp_path / 'empty.sqlite3'}", lambda: None
    settings = connection.settings_dict
    name = f"hw_unmigrated_{os.getpid()}"
    host, port = settings["HOST"] or "127.0.0.1", settings["PORT"]
    scheme = "postgres" if connection.vendor == "postgresql" else "mysql"
    with connection.cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS {name}")
        cursor.execute(f"CREATE DATABASE {name}")

    def drop():
        with connection.cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS {name}")

    return f"{scheme}://{settings['USER']}@{host}:{port}/{name}", drop


@pytest.mark.django_db(transaction=True)
def test_a_database_never_migrated_is_refused_with_what_to_do(tmp_path):
    """Not an outage to wait out for ever (SQLite's missing table is an OperationalError,
    which the worker retries) nor a traceback: a clear error, exit code 1, nothing
    registered."""
    url, drop = _empty_database(tmp_path)
    try:
        done = subprocess.run(
            [sys.executable, "manage.py", "runworker", "q", "--burst"],
            cwd=ROOT,
            env={**os.environ, "DATABASE_URL": url, "HAMMERWEB_USE_TEST_DB": "0"},
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        drop()
    assert done.returncode == 1, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("CommandError: database 'default' lacks"), done.stderr
    assert "run `manage.py migrate` first" in last
    assert "Traceback" not in done.stderr
