"""Idle pickup latency as users run it (`benchqueue --pickup N`): a `manage.py runworker`
child process with default options waits on an empty queue; this process enqueues N jobs one
at a time at random intervals; a job's latency is its `started_at` (the worker's claim) minus
the moment before its enqueue. Also what an idle worker costs: the child's CPU while it
waits, and the statements a `Worker` sends while idle (counted in this process)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from django.db.backends.signals import connection_created
from django.utils import timezone

from hammerweb.measure.benchmark.pickup_jobs import PICKUP_QUEUE
from queues.api import Job, JobQueue, JobStatus
from queues.models import Job as JobRow
from workers.api import Worker

#: The pause between two enqueues: random, so that the worker's timers cannot line up.
GAP_SECONDS = (0.05, 0.25)
IDLE_SECONDS = 5.0  # how long the idle cost is measured
START_TIMEOUT = 120.0


@dataclass
class PickupFigures:
    jobs: int
    p50_ms: float
    p99_ms: float
    max_ms: float
    enqueue_p50_ms: float  # how long enqueue() took (its commit): part of each latency
    idle_cpu_percent: float  # of one core, the runworker process while idle
    idle_queries_per_second: float  # a Worker's statements while idle (all its threads)

    def row(self) -> dict:
        return {key: round(value, 2) for key, value in self.__dict__.items()}


def percentile(values: list[float], fraction: float) -> float:
    ranked = sorted(values)
    return ranked[min(len(ranked) - 1, int(fraction * len(ranked)))]


def measure(jobs: int, seed: int = 0) -> PickupFigures:
    queue = JobQueue()
    _delete()
    child = _start_runworker()
    try:
        _warm_up(queue, child)
        cpu = _cpu_percent(child.pid, IDLE_SECONDS)
        enqueue_ms: list[float] = []
        latencies = _latencies(queue, jobs, random.Random(seed), enqueue_ms)
    finally:
        child.terminate()
        try:
            child.wait(30)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
        _delete()
    return PickupFigures(
        jobs=jobs,
        p50_ms=percentile(latencies, 0.5),
        p99_ms=percentile(latencies, 0.99),
        max_ms=max(latencies),
        enqueue_p50_ms=percentile(enqueue_ms, 0.5),
        idle_cpu_percent=cpu,
        idle_queries_per_second=idle_queries(IDLE_SECONDS),
    )


def _delete() -> None:
    JobRow.objects.filter(queue_name=PICKUP_QUEUE).delete()


def _start_runworker() -> subprocess.Popen:
    base = Path(__file__).resolve().parents[3]  # where manage.py is
    command = [sys.executable, str(base / "manage.py"), "runworker", PICKUP_QUEUE]
    command += ["--include", "hammerweb.measure.benchmark.pickup_jobs", "-v", "0"]
    return subprocess.Popen(command, cwd=base, env=os.environ.copy())


def _warm_up(queue: JobQueue, child: subprocess.Popen) -> None:
    """Wait until the worker runs a first job (start-up over), then let it fall idle."""
    job_id = queue.enqueue(Job(queue_name=PICKUP_QUEUE, payload={}))
    deadline = time.monotonic() + START_TIMEOUT
    while queue.get_job(job_id).status != JobStatus.COMPLETED:
        if child.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the runworker child did not start (exit code {child.poll()})")
        time.sleep(0.05)
    time.sleep(1.0)


def _latencies(
    queue: JobQueue, jobs: int, rng: random.Random, enqueue_ms: list[float]
) -> list[float]:
    """Each job's latency (ms); `enqueue_ms` gets how long each enqueue took (its commit
    included: the job cannot be seen before it)."""
    sent = []
    for _ in range(jobs):
        time.sleep(rng.uniform(*GAP_SECONDS))
        before = timezone.now()
        sent.append((queue.enqueue(Job(queue_name=PICKUP_QUEUE, payload={})), before))
        enqueue_ms.append((timezone.now() - before).total_seconds() * 1000)
    latencies = []
    deadline = time.monotonic() + START_TIMEOUT
    for job_id, before in sent:
        job = queue.get_job(job_id)
        while job.started_at is None and time.monotonic() < deadline:
            time.sleep(0.05)
            job = queue.get_job(job_id)
        if job.started_at is None:
            raise RuntimeError(f"job {job_id} never started")
        latencies.append((job.started_at - before).total_seconds() * 1000)
    return latencies


def _cpu_percent(pid: int, seconds: float) -> float:
    """The CPU time of process `pid` (every thread) over `seconds` of wall time, in %."""
    ticks = os.sysconf("SC_CLK_TCK")

    def used() -> float:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / ticks  # utime + stime

    start, started = used(), time.monotonic()
    time.sleep(seconds)
    return 100 * (used() - start) / (time.monotonic() - started)


def idle_queries(seconds: float) -> float:
    """Statements per second of a `Worker` (default poll interval) waiting on an empty
    queue, on every connection it opens: its claimer's checks, heartbeats, LISTEN."""
    count = [0]
    lock = threading.Lock()

    def counting(execute, sql, params, many, context):
        with lock:
            count[0] += 1
        return execute(sql, params, many, context)

    def install(sender, connection, **kwargs):
        connection.execute_wrappers.append(counting)

    name = f"{PICKUP_QUEUE}_idle_{os.getpid()}"
    worker = Worker(JobQueue(), name, lambda job: None, poll_interval=timedelta(seconds=1))
    stop = threading.Event()
    connection_created.connect(install, dispatch_uid="pickup-idle")
    thread = threading.Thread(target=worker.run, args=(stop,))
    try:
        thread.start()
        time.sleep(1.0)  # its first claim and set-up are not what idling costs
        with lock:
            count[0] = 0
        started = time.monotonic()
        time.sleep(seconds)
        with lock:
            counted = count[0]
        elapsed = time.monotonic() - started
    finally:
        stop.set()
        thread.join(60)
        connection_created.disconnect(dispatch_uid="pickup-idle")
    return counted / elapsed


def report_pickup(command, figures: PickupFigures, as_json: bool) -> None:
    """benchqueue's lines (or JSON object) of the pickup measurement."""
    from django.db import connection

    if as_json:
        command.stdout.write(json.dumps({"vendor": connection.vendor, "pickup": figures.row()}))
        return
    command.stdout.write(
        f"idle pickup ({connection.vendor}, runworker with default options, {figures.jobs} "
        f"jobs): p50 {figures.p50_ms:.1f} ms, p99 {figures.p99_ms:.1f} ms, "
        f"max {figures.max_ms:.1f} ms (enqueue() itself, commit included: p50 "
        f"{figures.enqueue_p50_ms:.1f} ms)"
    )
    command.stdout.write(
        f"idle cost: runworker {figures.idle_cpu_percent:.2f}% of a core, a Worker's "
        f"statements {figures.idle_queries_per_second:.1f}/s"
    )
