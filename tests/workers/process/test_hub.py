"""A worker process's queues share one hub (workers/runtime/hub.py): one writer whose write
records the outcomes of every queue, one heartbeat that extends every queue's leases and
finds every queue's lost runs, one watcher of the stop. The process runs in a thread, its
handlers use the ORM, on the real database."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest

from queues.api import Job, JobQueue, JobStatus, TestQueue
from queues.models import WorkerProcess
from tests.conftest import unique_queue
from tests.workers.support.helpers import wait_for_status, wait_until
from workers.api import Worker
from workers.process.host import ProcessSettings, WorkerProcessRuntime
from workers.runtime import Request, WorkerRun

pytestmark = pytest.mark.django_db(transaction=True)


class Process:
    """A `runworker` process's runtime in a thread, serving `queues` with `handler`."""

    def __init__(self, queues: list[str], handler, **settings) -> None:
        settings = {"batch_size": 1, "concurrency": 1, **settings}
        self.queues = queues
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

    def wait_for_hand_ins(self, count: int) -> None:
        """Wait until every queue's run has started, on one hub, and `count` requests
        wait for its writer."""
        workers = self.runtime.workers
        wait_until(lambda: len(self.hubs()) == 1 and len(workers) == len(self.queues)
                   and all(w.current_run for w in workers), 30,
                   "the runs did not start on one hub")  # fmt: skip
        hub = workers[0].current_run.hub

        def waiting() -> int:
            with hub.lock:
                return sum(len(lane.state.outbox) for lane in hub.lanes)

        wait_until(lambda: waiting() == count, 30, f"{count} requests never waited")


class FirstWriteHeld:
    """Three queues' jobs, the first queue's (`a`) ending first: its outcome's write is held
    until `gate` is set, and the other queues' handlers end meanwhile, so that their outcomes
    wait for the writer together. With `bug_in`, a write that holds that queue's outcome
    meets a bug. The handler uses the ORM."""

    def __init__(self, a: str, bug_in: str | None = None) -> None:
        self.a, self.bug_in = a, bug_in
        self.first_write, self.gate = threading.Event(), threading.Event()
        self.writes: list[set[str]] = []  # the queues of each write's outcomes

    def handler(self, job):
        if job.queue_name != self.a:
            self.first_write.wait(30)  # b's and c's jobs end while a's outcome is being written
        return {"queue": job.queue_name, "processes": WorkerProcess.objects.count()}

    def install(self, process: Process) -> list[set[str]]:
        write_runs = process.runtime.queue.write_runs

        def held(finished, *args, **kwargs):
            if finished:
                self.writes.append({job.queue_name for job, _ in finished})
                if len(self.writes) == 1:
                    self.first_write.set()
                    self.gate.wait(30)
                if self.bug_in in self.writes[-1]:
                    raise RuntimeError(f"a bug in {self.bug_in}'s outcome")
            return write_runs(finished, *args, **kwargs)

        process.runtime.queue.write_runs = held  # the process's one queue object
        return self.writes


def test_one_write_records_the_outcomes_of_several_queues():
    a, b, c = (unique_queue(name) for name in "abc")
    queue = JobQueue()
    ids = {name: queue.enqueue(Job(queue_name=name)) for name in (a, b, c)}
    held = FirstWriteHeld(a)

    with Process([a, b, c], held.handler) as process:
        writes = held.install(process)
        try:
            process.wait_for_hand_ins(2)  # b's and c's, while a's is written
            names = [thread.name for thread in threading.enumerate()]
            for role in ("writer", "heartbeat", "watch"):
                assert names.count(role) == 1, f"one {role} for the three queues: {names}"
            assert not [name for name in names if name.endswith(("-writer", "-heartbeat"))]
        finally:
            held.gate.set()
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


def test_a_write_that_fails_on_one_queue_s_outcome_records_the_other_queues_alone(caplog):
    """A bug met by one queue's outcome (here, any write that holds it) fails the write of
    several queues: each queue's outcomes are written again alone, so that only that
    queue's jobs stay Running for the reaper."""
    a, b, c = (unique_queue(name) for name in ("apart-a", "apart-b", "apart-c"))
    queue = JobQueue()
    ids = {name: queue.enqueue(Job(queue_name=name)) for name in (a, b, c)}
    held = FirstWriteHeld(a, bug_in=b)

    with caplog.at_level("ERROR", logger="workers"), Process([a, b, c], held.handler) as process:
        writes = held.install(process)
        try:
            process.wait_for_hand_ins(2)  # b's and c's, while a's is written
        finally:
            held.gate.set()
        wait_for_status(queue, c, "Completed", 1, 30)
    assert writes[1] == {b, c}, writes
    assert {b} in writes[2:] and {c} in writes[2:], f"not written apart: {writes}"
    assert queue.get_job(ids[a]).status == JobStatus.COMPLETED
    assert queue.get_job(ids[b]).status == JobStatus.RUNNING, "b's job is left for the reaper"
    assert "writing each queue's alone" in caplog.text


def test_a_run_that_ended_leaves_the_heartbeat_and_is_forgotten_once_written():
    """A handler past the grace period stays Running when its run ends: the hub's heartbeat,
    which goes on for the other queues, must no longer extend its lease; the run's last
    requests are still written."""
    queue = TestQueue()
    first = WorkerRun(Worker(queue, "a", lambda job: None), threading.Event(), threading.Event())
    second = WorkerRun(Worker(queue, "b", lambda job: None), first.stop, first.force, hub=first.hub)
    hub = first.hub
    stuck, written = Job(queue_name="a"), Job(queue_name="a")
    first.state.running = {id(stuck): stuck, id(written): written}
    second.state.running = {1: Job(queue_name="b")}
    first.state.outbox.append(Request((written, None), None))
    assert len(hub.running_jobs()) == 3
    hub.leave(first.lane)
    assert hub.running_jobs() == list(second.state.running.values()), "a's lease is extended"
    assert first.lane in hub.lanes, "a's request waits for the writer"
    first.state.outbox.clear()
    with hub.lock:
        hub.prune()
    assert hub.lanes == [second.lane]
