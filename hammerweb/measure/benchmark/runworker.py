"""`benchqueue`'s figures of what users run: `manage.py runworker` in a child process,
start-up included, on the handler shapes of `shapes` (None, a dict, a dict on jobs with a
timeout, a django.tasks `@task`, an ORM write, None on the jobs of one `enqueue_batch`, and
the dict on jobs spread over four queues), with one and two worker processes."""

from __future__ import annotations

import compileall
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from django.conf import settings
from django.db import connections

from hammerweb.measure.benchmark import cpu, shapes, statements
from hammerweb.measure.benchmark.runs import Figure
from hammerweb.measure.models import BenchNote
from queues.api import Job, JobBatch, JobQueue
from queues.groups import MAX_BATCH_JOBS
from queues.models import Batch
from queues.tasks.jobs import task_payload

#: As the issue measured it: batch 50, concurrency 10, a short poll, exit when empty.
OPTIONS = ["--burst", "--batch-size", "50", "--concurrency", "10", "--poll-interval", "0.05"]
PROCESSES = (1, 2)


def runworker_rates(queue: JobQueue, count: int) -> list[Figure]:
    byte_compile()
    return [
        runworker_rate(queue, count, label, name, processes)
        for processes in PROCESSES
        for label, name in shapes.SHAPES
    ]


def runworker_rate(queue: JobQueue, count: int, label: str, name: str, processes: int) -> Figure:
    _clear(queue, name)
    try:
        _enqueue(queue, name, count)
        # Not timed: the table without the dead rows of earlier figures (autovacuum may be
        # off or behind) and its statistics those of the backlog, as autovacuum would leave
        # them on a live server and as `scripts/bench-peers` does. Else each figure pays for
        # the churn of all before it.
        queue.vacuum_jobs()
        worker_before, server_before = cpu.children_cpu(), server_cpu(queue.using)
        seconds, sent = _run(queue.using, name, processes)
        worker_cpu = cpu.children_cpu() - worker_before
        server_after = server_cpu(queue.using)
        completed = sum(
            queue.get_job_counts_by_status(each)["Completed"] for each in shapes.queues_of(name)
        )
        if completed != count:
            raise RuntimeError(f"runworker completed {completed} of {count} jobs of {name}")
    finally:
        _clear(queue, name)
    return Figure(
        "runworker",
        f"{label}, processes {processes}",
        count,
        seconds,
        worker_cpu=worker_cpu,
        server_cpu=None if None in (server_before, server_after) else server_after - server_before,
        statements=sent,
    )


#: How to find the server's process id on each vendor: PostgreSQL names this connection's
#: backend (its parent is the postmaster), MariaDB and MySQL the file their pid is in.
_SERVER_PID = {"postgresql": "SELECT pg_backend_pid()", "mysql": "SELECT @@pid_file"}


def server_cpu(using: str) -> float | None:
    """CPU seconds the database server has used so far, if it runs on this machine (None
    for SQLite, whose work is the worker's, and for a server elsewhere)."""
    connection = connections[using]
    query = _SERVER_PID.get(connection.vendor)
    if query is None or not cpu.is_local(connection.settings_dict.get("HOST")):
        return None
    with connection.cursor() as cursor:
        cursor.execute(query)
        (found,) = cursor.fetchone()
    if connection.vendor == "postgresql":
        return cpu.postgres_cpu(found)
    try:
        with open(found) as file:
            pid = int(file.read().split()[0])
    except (OSError, ValueError, IndexError):  # no pid file to read here
        return None
    return cpu.process_cpu(pid)


def byte_compile() -> None:
    """Byte-compile the project's own modules, as pip compiles an installed package (and
    the peers' packages are): from a checkout under PYTHONDONTWRITEBYTECODE, every runworker
    child would compile them again at start-up (0.1 s of a 5,000-job run, measured)."""
    for package in ("queues", "workers", "hammerweb"):
        compileall.compile_dir(str(settings.BASE_DIR / package), quiet=1)


def _enqueue(queue: JobQueue, name: str, count: int) -> None:
    if name != shapes.BATCH:
        queue.enqueue_many(_jobs(name, count))
        return
    jobs = list(_jobs(name, count))
    for start in range(0, count, MAX_BATCH_JOBS):  # as many batches as it takes
        queue.enqueue_batch(JobBatch(name, jobs[start : start + MAX_BATCH_JOBS]))


def _jobs(name: str, count: int):
    if name == shapes.FOUR:
        queues = shapes.queues_of(name)
        return (Job(queue_name=queues[i % len(queues)], payload={"i": i}) for i in range(count))
    if name == shapes.TASK:
        return (Job(queue_name=name, payload=task_payload(shapes.add, [i, 1], {}))
                for i in range(count))  # fmt: skip
    if name == shapes.TIMED:
        return (Job(queue_name=name, payload={"i": i}, timeout=shapes.TIMEOUT)
                for i in range(count))  # fmt: skip
    return (Job(queue_name=name, payload={"i": i}) for i in range(count))


def _run(using: str, name: str, processes: int) -> tuple[float, int | None]:
    """Seconds from starting `runworker` to its exit (it exits once the queue is empty), and
    the statements its processes sent, start-up included (`statements`)."""
    command = [
        sys.executable, str(settings.BASE_DIR / "manage.py"), "runworker",
        *shapes.queues_of(name), *OPTIONS,
        "--processes", str(processes), "--database", using,
        "--include", shapes.__name__,
    ]  # fmt: skip
    directory = tempfile.TemporaryDirectory()
    counts = Path(directory.name) / "statements"
    env = {
        **os.environ,
        "DJANGO_DEBUG": "0",
        "HAMMERWEB_MEASURE": "1",
        statements.ENVIRONMENT: str(counts),
    }
    with directory, tempfile.TemporaryFile() as output:
        began = time.perf_counter()
        code = subprocess.call(command, env=env, stdout=output, stderr=subprocess.STDOUT)
        seconds = time.perf_counter() - began
        if code:
            output.seek(0)
            tail = output.read()[-2000:].decode(errors="replace")
            raise RuntimeError(f"runworker exited with {code}:\n{tail}")
        return seconds, statements.total(counts)


def _clear(queue: JobQueue, name: str) -> None:
    """The queue's jobs and the ORM handler's rows gone: every figure starts clean."""
    with connections[queue.using].cursor() as cursor:
        for each in shapes.queues_of(name):
            cursor.execute("DELETE FROM queues_job WHERE queue_name = %s", [each])
    Batch.objects.using(queue.using).filter(name=name).delete()
    BenchNote.objects.using(queue.using).all().delete()
