"""A worker process's queues share one hub (workers/runtime/hub.py): one writer whose write
records the outcomes of every queue, one heartbeat that extends every queue's leases and
finds every queue's lost runs, one watcher of the stop. The process runs in a thread, its
handlers use the ORM, on the real database."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest

from queues.api import Job, JobQueue, JobStatus
from queues.models import WorkerProcess
from tests.conftest import unique_queue
from tests.workers.support.helpers import wait_for_status, wait_until
from workers.process.host import ProcessSettings, WorkerProcessRuntime

pytestmark = pytest.mark.django_db(transaction=True)


class Process:
    """A `runworker` process's runtime in a thread, serving `queues` with `handler`."""

    def __init__(self, queues: list[str], handler, **settings) -> None:
        settings = {"batch_size": 1, "concurrency": 1, **settings}
        self.runtime = WorkerProcessRuntime(
            ProcessSettings(
                queues=queues, poll_interval=timedelta(milliseconds=20), handler=handler, **settings
            )
        )
        self.stop, self.force = threading.Event(), threading.Event()
        self.thread = threading.Thread(target=self.runtime.run, args=(self.stop, self.force))

    def __enter__(self) -> Process:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join(30)
        assert not self.thread.is_alive(), "the process did not stop"

    def hubs(self) -> set:
        runs = [worker.current_run for worker in self.runtime.workers]
        return {id(run.hub) for run in runs if run is not None}


def test_one_write_records_the_outcomes_of_several_queues():
    a, b, c = (unique_queue(name) for name in "abc")
    queue = JobQueue()
    ids = {name: queue.enqueue(Job(queue_name=name)) for name in (a, b, c)}
    first_write = threading.Event()
    gate = threading.Event()

    def handler(job):
        if job.queue_name != a:
            first_write.wait(30)  # b's and c's jobs end while a's outcome is being written
        return {"queue": job.queue_name, "processes": WorkerProcess.objects.count()}

    with Process([a, b, c], handler) as process:
        writes: list[set[str]] = []
        write_runs = process.runtime.queue.write_runs

        def gated(finished, *args, **kwargs):
            if finished:
                writes.append({job.queue_name for job, _ in finished})
                if len(writes) == 1:
                    first_write.set()
                    gate.wait(30)
            return write_runs(finished, *args, **kwargs)

        process.runtime.queue.write_runs = gated  # the process's one queue object
        try:
            wait_until(lambda: len(process.hubs()) == 1 and len(process.runtime.workers) == 3
                       and all(w.current_run for w in process.runtime.workers), 30,
                       "the runs did not start on one hub")  # fmt: skip
            hub = process.runtime.workers[0].current_run.hub

            def waiting() -> int:
                with hub.lock:
                    return sum(len(lane.state.outbox) for lane in hub.lanes)

            wait_until(lambda: waiting() == 2, 30, "b's and c's outcomes never waited")
            names = [thread.name for thread in threading.enumerate()]
            for role in ("writer", "heartbeat", "watch"):
                assert names.count(role) == 1, f"one {role} for the three queues: {names}"
            assert not [name for name in names if name.endswith(("-writer", "-heartbeat"))]
        finally:
            gate.set()
        for name in (a, b, c):
            wait_for_status(queue, name, "Completed", 1, 30)
    assert writes[:2] == [{a}, {b, c}], "b's and c's outcomes were not one write"
    for name, job_id in ids.items():
        assert queue.get_job(job_id).result == {"queue": name, "processes": 1}


def test_one_heartbeat_extends_every_queue_s_leases_and_stops_only_the_lost_run():
    a, b = unique_queue("beat-a"), unique_queue("beat-b")
    queue = JobQueue()
    job_a = queue.enqueue(Job(queue_name=a))
    job_b = queue.enqueue(Job(queue_name=b))
    release = threading.Event()
    ended: dict = {}

    def handler(job):
        while not (release.is_set() or job.cancel_requested()):
            time.sleep(0.01)
        ended[job.queue_name] = job.cancel_requested()
        return {"rows": WorkerProcess.objects.count()}

    with Process([a, b], handler, lease=timedelta(seconds=1.5)):
        try:
            wait_for_status(queue, a, "Running", 1, 30)
            wait_for_status(queue, b, "Running", 1, 30)
            leases = {job_id: queue.get_job(job_id).lease_expires_at for job_id in (job_a, job_b)}
            wait_until(
                lambda: all(queue.get_job(i).lease_expires_at > leases[i] for i in leases),
                30,
                "the heartbeat did not extend both queues' leases",
            )
            queue.cancel_job(job_b)
            wait_until(lambda: b in ended, 30, "b's handler was never asked to stop")
            assert ended[b] is True
            assert a not in ended, "a's handler was asked to stop for b's cancel"
            assert queue.get_job(job_a).status == JobStatus.RUNNING
        finally:
            release.set()
        wait_for_status(queue, a, "Completed", 1, 30)
    assert ended[a] is False
    assert queue.get_job(job_b).status == JobStatus.FAILED
