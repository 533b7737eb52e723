"""`runworker --metrics-port / --health-port` in a child process on the test database: the
process's metrics after a real run, its health while it works, when its writer thread dies
and when its database is cut off, the token, one port per child with --processes."""

from __future__ import annotations

import os
import socket
import uuid
from collections import Counter
from datetime import timedelta
from urllib.parse import urlsplit

import pytest
from django.db import connection
from django.utils import timezone
from prometheus_client import generate_latest

from queues.api import Job, JobQueue, JobStatus
from queues.models import WorkerProcess
from queues.ops.metrics import queue_registry
from queues.retry import Fixed
from queues.store.counters import completions
from tests.workers.runworker.test_runworker import RunWorker
from tests.workers.support.helpers import wait_until
from tests.workers.support.probe_client import (
    free_port,
    free_ports,
    get,
    listener,
    samples,
    value,
    wait_for,
)
from tests.workers.support.probe_jobs import PROBE_QUEUE
from tests.workers.support.tcp_proxy import TcpProxy

pytestmark = pytest.mark.django_db(transaction=True)
INCLUDE = ["--include", "tests.workers.support.probe_jobs", "--reaper-interval", "0.2"]
TOKEN = "s3cret-scrape-token"


@pytest.fixture
def runworker(tmp_path):
    started: list[RunWorker] = []

    def start(*args: str, env: dict | None = None) -> RunWorker:
        run = RunWorker(tmp_path, PROBE_QUEUE, *args, *INCLUDE, env=env)
        started.append(run)
        return run

    yield start
    for run in started:
        run.stop()


def stale_job(queue_name: str):
    """A job Running under a lease that expired a minute ago (the reaper's to take back)."""
    job_id = JobQueue().enqueue(Job(queue_name=queue_name, payload={}))
    past = timezone.now() - timedelta(minutes=1)
    Job.objects.filter(id=job_id).update(
        status=JobStatus.RUNNING, run_token=uuid.uuid4(), started_at=past, lease_expires_at=past,
        attempts=1,
    )
    return job_id


def test_metrics_of_a_real_run(runworker):
    queue = JobQueue()
    queue.enqueue_many([Job(queue_name=PROBE_QUEUE, payload={"seconds": 0.02}) for _ in range(5)])
    dead = queue.enqueue(Job(queue_name=PROBE_QUEUE, payload={"fail": True}, max_attempts=1))
    retried = queue.enqueue(Job(
        queue_name=PROBE_QUEUE, payload={"fail": True}, max_attempts=3,
        retry_strategy=Fixed(delay_seconds=600),
    ))
    stale = stale_job("probe_elsewhere")  # a queue nobody works: the job stays requeued
    overdue = timezone.now() - timedelta(minutes=2)
    queue.enqueue(Job(queue_name="probe_late", payload={}, scheduled_at=overdue))
    port = free_port()
    run = runworker("--metrics-port", f"127.0.0.1:{port}")

    def settled():
        counts = queue.get_job_counts_by_status(PROBE_QUEUE)
        return (counts["Completed"] == 5 and counts["Dead"] == 1
                and Job.objects.get(id=retried).attempts == 1
                and Job.objects.get(id=stale).status == JobStatus.PENDING)

    wait_until(settled, 60, "the run did not settle")
    assert Job.objects.get(id=dead).status == JobStatus.DEAD
    parsed = samples(wait_for(port, 200, run=run))

    assert value(parsed, "hammerweb_worker_jobs_completed_total", queue=PROBE_QUEUE) == 5
    assert value(parsed, "hammerweb_worker_jobs_failed_total", queue=PROBE_QUEUE,
                 status="Dead") == 1
    assert value(parsed, "hammerweb_worker_jobs_retried_total", queue=PROBE_QUEUE) == 1
    assert value(parsed, "hammerweb_worker_reaper_rescues_total", outcome="requeued") == 1
    # Seven runs, timed: five of at least 20 ms.
    assert value(parsed, "hammerweb_job_run_seconds_count", queue=PROBE_QUEUE) == 7
    assert value(parsed, "hammerweb_job_run_seconds_sum", queue=PROBE_QUEUE) >= 5 * 0.02
    assert value(parsed, "hammerweb_job_run_seconds_bucket", queue=PROBE_QUEUE, le="0.01") <= 2
    assert value(parsed, "hammerweb_job_start_latency_seconds_count", queue=PROBE_QUEUE) == 7
    assert value(parsed, "hammerweb_worker_jobs_held", queue=PROBE_QUEUE) == 0
    assert value(parsed, "hammerweb_worker_jobs_running", queue=PROBE_QUEUE) == 0
    assert value(parsed, "process_resident_memory_bytes") > 0  # the default collectors too

    # The queues' state, from the database: what the view serves (tests/queues/views).
    parsed = samples(generate_latest(queue_registry()).decode())
    for status, n in {"Completed": 5, "Dead": 1, "Pending": 1, "Running": 0}.items():
        assert value(parsed, "hammerweb_jobs", queue=PROBE_QUEUE, status=status) == n
    assert value(parsed, "hammerweb_jobs", queue="probe_elsewhere", status="Pending") == 1
    # The retried job waits ten minutes: nothing of the worked queue is due.
    assert value(parsed, "hammerweb_queue_oldest_due_seconds", queue=PROBE_QUEUE) == 0
    assert 120 <= value(parsed, "hammerweb_queue_oldest_due_seconds", queue="probe_late") < 300
    assert value(parsed, "hammerweb_workers_alive") == 1
    # The process's row is written at its heartbeats (every 5 s): on a slow machine the last
    # one may have come while the jobs were still held, so wait for the one after the work.
    wait_until(lambda: WorkerProcess.objects.get().jobs_held == 0, 30, "no heartbeat since")
    parsed = samples(generate_latest(queue_registry()).decode())
    row = WorkerProcess.objects.get()
    labels = {"process": str(row.id), "hostname": row.hostname, "pid": str(run.proc.pid)}
    assert value(parsed, "hammerweb_process_jobs_held", **labels) == 0
    assert value(parsed, "hammerweb_process_jobs_running", **labels) == 0
    # Each minute's completions, read as of the minute after it.
    minutes = Counter(
        completions.minute_of(at)
        for at in Job.objects.filter(status=JobStatus.COMPLETED).values_list("completed_at",
                                                                            flat=True)
    )
    for minute, n in minutes.items():
        later = queue_registry(clock=lambda minute=minute: minute + timedelta(seconds=61))
        parsed = samples(generate_latest(later).decode())
        assert value(parsed, "hammerweb_queue_completions_last_minute", queue=PROBE_QUEUE) == n


def test_metrics_token_on_the_port(runworker):
    port = free_port()
    run = runworker("--metrics-port", f"127.0.0.1:{port}",
                    env={"HAMMERWEB_METRICS_TOKEN": TOKEN})
    wait_for(port, 401, run=run)
    assert get(port, token="wrong")[0] == 401
    status, body = get(port, token=TOKEN)
    assert status == 200 and "hammerweb_worker_jobs_held" in body


def test_health_answers_200_while_working_and_503_once_stopped(runworker, tmp_path):
    port = free_port()
    run = runworker("--health-port", f"127.0.0.1:{port}", "--grace-period", "5")
    assert wait_for(port, 200, run=run) == "ok\n"
    started = tmp_path / "started"
    JobQueue().enqueue(Job(queue_name=PROBE_QUEUE, payload={"seconds": 3, "started": str(started)}))
    # Its handler, not only its claim (a claimed job waiting for a slot is Running too, and
    # a drain hands it back at once: the worker would exit before the probe says 503).
    wait_until(started.exists, 30, "the job did not start")
    run.signal(15)  # drains: the claimer stops, the job runs on
    body = wait_for(port, 503, run=run)
    assert body == f"queue {PROBE_QUEUE}: the worker is stopping\n"
    assert run.wait() == 0


def test_health_503_when_the_writer_thread_dies(runworker):
    port = free_port()
    run = runworker("--health-port", f"127.0.0.1:{port}",
                    env={"HAMMERWEB_TEST_BREAK_WRITER": "1"})
    wait_for(port, 200, run=run)
    JobQueue().enqueue(Job(queue_name=PROBE_QUEUE, payload={}))
    body = wait_for(port, 503, run=run)
    assert body == f"queue {PROBE_QUEUE}: the writer thread has stopped\n"


def test_health_503_while_the_database_is_cut_off(runworker):
    if connection.vendor == "sqlite":
        pytest.skip("SQLite is a file in the process: no server to cut off")
    settings = connection.settings_dict
    proxy = TcpProxy((settings["HOST"] or "127.0.0.1", int(settings["PORT"])))
    # The project's URL with the proxy's port: the child still picks the test database.
    url = urlsplit(os.environ["DATABASE_URL"])
    url = url._replace(netloc=f"{url.username}@127.0.0.1:{proxy.port}").geturl()
    port = free_port()
    try:
        run = runworker("--health-port", f"127.0.0.1:{port}", env={"DATABASE_URL": url})
        wait_for(port, 200, run=run)
        proxy.cut()
        body = wait_for(port, 503, run=run)
        assert body.startswith("database 'default' does not answer: "), body
        proxy.restore()
        assert wait_for(port, 200, run=run) == "ok\n"  # and back once it answers
    finally:
        proxy.cut()


def test_each_child_serves_its_own_ports(runworker):
    metrics = free_ports(4)  # metrics on it and the next, health on the two after
    health = metrics + 2
    run = runworker("--processes", "2", "--metrics-port", f"127.0.0.1:{metrics}",
                    "--health-port", f"127.0.0.1:{health}")
    for index in range(2):
        assert wait_for(health + index, 200, run=run) == "ok\n"
        parsed = samples(wait_for(metrics + index, 200, run=run))
        assert value(parsed, "hammerweb_worker_jobs_held", queue=PROBE_QUEUE) == 0
    wait_until(lambda: WorkerProcess.objects.count() == 2, 30, "two children registered")
    # Two processes, not one answering twice: child i holds both of its ports, and the
    # supervisor none (process_start_time_seconds is in clock ticks: two children started
    # within 10 ms of each other have the same one).
    children = {listener(metrics + index) for index in range(2)}
    assert children == {listener(health + index) for index in range(2)}
    assert len(children) == 2 and run.proc.pid not in children
    assert children == set(WorkerProcess.objects.values_list("pid", flat=True))


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as sock:
            sock.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.mark.skipif(not _ipv6_loopback(), reason="this machine has no IPv6 loopback")
def test_ports_on_ipv6_and_on_every_interface_of_both_families(runworker):
    metrics, health = free_port(), free_port()
    run = runworker("--metrics-port", str(metrics), "--health-port", f"[::1]:{health}")
    assert wait_for(health, 200, run=run, host="[::1]") == "ok\n"
    with pytest.raises(OSError):  # bound to ::1 only
        get(health)
    # No host: one dual-stack socket, reached over IPv4 and IPv6.
    for host in ("127.0.0.1", "[::1]"):
        parsed = samples(wait_for(metrics, 200, run=run, host=host))
        assert value(parsed, "hammerweb_worker_jobs_held", queue=PROBE_QUEUE) == 0
    assert f"serving health on ::1:{health}" in run.text()


def test_a_taken_port_is_a_clear_error_before_any_work(runworker):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        run = runworker("--health-port", f"127.0.0.1:{port}")
        assert run.wait() == 1
    assert f"CommandError: cannot serve health on 127.0.0.1:{port}" in run.text()
    assert "Traceback" not in run.text()
    assert not WorkerProcess.objects.exists()  # it never registered
