"""The writer's group commit (`Writer.linger`): while jobs are short, it waits until every
busy slot waits for the write. No database: the conditions are driven by hand."""

from __future__ import annotations

import threading

from queues.api import Job, TestQueue
from workers.api import Worker
from workers.runtime import LINGER, Request, RunState, WorkerRun


class Recording:
    """Stands in for the writer's condition: records each wait instead of sleeping."""

    def __init__(self, run: RunState, arrive: int = 0) -> None:
        self.run, self.arrive, self.waits = run, arrive, []

    def wait(self, timeout=None):
        self.waits.append(timeout)
        if self.arrive:  # another slot hands in meanwhile, and waits for the write
            self.arrive -= 1
            self.run.outbox.append(Request(None, None))
            self.run.blocked += 1
        return True


def make_run(concurrency: int = 4):
    """The state of a worker run, with one request waiting, and its writer."""
    worker = Worker(TestQueue(), "q", lambda job: None, batch_concurrency=concurrency)
    run = WorkerRun(worker, threading.Event(), threading.Event())
    run.state.outbox.append(Request(None, None))
    run.state.blocked = 1  # its slot waits for the write
    return run.state, run.writer


def test_long_jobs_are_written_at_once():
    run, writer = make_run()
    writer.hub.requests = Recording(run)
    run.run_time = LINGER * 5
    writer.linger()
    assert writer.hub.requests.waits == []


def test_no_wait_before_a_run_time_is_known():
    run, writer = make_run()
    writer.hub.requests = Recording(run)
    writer.linger()
    assert writer.hub.requests.waits == []


def test_short_jobs_wait_for_the_busy_slots_then_write_together():
    run, writer = make_run(concurrency=4)
    run.idle = 1  # three busy slots: one handed in, two to come
    writer.hub.requests = Recording(run, arrive=2)
    run.run_time = LINGER / 10
    writer.linger()
    assert len(writer.hub.requests.waits) == 2 and all(
        0 < t <= LINGER for t in writer.hub.requests.waits
    )
    assert len(run.outbox) == 3


def test_short_jobs_wait_no_longer_than_the_linger():
    run, writer = make_run(concurrency=4)
    writer.hub.requests = Recording(run)  # nobody else hands in
    run.run_time = LINGER / 10
    writer.linger()
    assert writer.hub.requests.waits, "it did not wait for the busy slots"
    assert len(run.outbox) == 1


def test_a_failed_write_does_not_stop_the_worker(caplog):
    """A write that raises (a bug, not a lost connection) leaves its jobs Running for the
    reaper; the slots go on with the next jobs. The failed write may carry more than one
    outcome (a slot hands its outcome in and goes on before the write)."""
    from tests.workers.support.helpers import running, wait_until

    class BrokenOnce(TestQueue):
        lost: list | None = None

        def write_runs(self, finished, starting, checking=(), answered=None, on_checked=None):
            if self.lost is None:
                self.lost = [job.id for job, _ in finished]
                raise RuntimeError("a bug in the write")
            return super().write_runs(finished, starting, checking, answered, on_checked)

    queue = BrokenOnce()
    ids = [queue.enqueue(Job(queue_name="q")) for _ in range(6)]
    worker = Worker(queue, "q", lambda job: None, batch_size=1)

    def settled():
        counts = queue.get_job_counts_by_status("q")
        return queue.lost is not None and counts["Completed"] == len(ids) - len(queue.lost)

    with caplog.at_level("ERROR", logger="workers"), running(worker):
        wait_until(settled, 10, "the jobs after the failed write were not all completed")
    assert 1 <= len(queue.lost) < len(ids)
    running_ids = {job.id for job in queue.store.jobs.values() if job.status == "Running"}
    assert running_ids == set(queue.lost), "the failed write's jobs stay Running"
    assert "a bug in the write" in caplog.text


def test_hand_ins_that_do_not_wait_do_not_end_the_linger():
    """Slots that hand in and go on (their next jobs already taken) add to the write; the
    write waits for the slots that will wait for it, up to the linger."""
    run, writer = make_run(concurrency=2)
    run.blocked = 0  # the first request's slot went on
    run.run_time = LINGER / 10
    run.outbox += [Request(None, None), Request(None, None)]
    writer.hub.requests = Recording(run, arrive=1)  # then one slot waits for the write
    writer.linger()
    assert len(run.outbox) == 4, "it waited for the waiting slot's request"
    assert run.blocked == 1


def two_lanes():
    """Two worker runs of one hub, their jobs short: their states and the writer."""
    queue = TestQueue()
    first = WorkerRun(Worker(queue, "a", lambda job: None, batch_concurrency=2), *stops())
    second = WorkerRun(
        Worker(queue, "b", lambda job: None, batch_concurrency=2), first.stop, first.force,
        hub=first.hub,
    )  # fmt: skip
    assert second.hub is first.hub
    for run in (first, second):
        run.state.run_time = LINGER / 10
    return first.state, second.state, first.writer


def stops():
    return threading.Event(), threading.Event()


def test_a_queue_whose_busy_slots_all_wait_is_written_without_waiting_for_another():
    a, b, writer = two_lanes()
    a.outbox += [Request(None, None), Request(None, None)]
    a.blocked = 2  # both of a's slots wait for this write (a workflow's jobs, say)
    # b's two slots run short jobs that go on without waiting; b has handed in nothing yet.
    writer.hub.requests = Recording(b)
    writer.linger()
    assert writer.hub.requests.waits == [], "a's write lingered for b"


def test_a_queue_whose_slots_go_on_lingers_for_the_other_queue_s_hand_ins():
    a, b, writer = two_lanes()
    a.outbox.append(Request(None, None))  # a's slot handed in and went on
    writer.hub.requests = Recording(b, arrive=2)  # b's two slots hand in and wait
    writer.linger()
    assert len(writer.hub.requests.waits) == 2 and len(b.outbox) == 2
