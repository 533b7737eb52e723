"""A slot that hands in an outcome without waiting for its write (a job in no batch or
workflow) and goes on to its next held job: that job starts only if the writer's next write,
begun after the slot asked, reads that its run is still this worker's and its queue not paused
(`JobQueue.write_runs`); otherwise the writer's start marker decides, as for any held job.
And the writer may fall behind by at most `unwritten_limit` outcomes before the slots wait
for it.

On the real database, with the writer's own thread; the claim's start window is widened so
that the read, not the start marker, is what the held jobs meet."""

from __future__ import annotations

import threading
import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from queues.api import (
    BatchStatus,
    DequeueOptions,
    Job,
    JobBatch,
    JobOutcome,
    JobQueue,
    JobStatus,
    PartialFailureMode,
)
from tests.conftest import unique_queue
from tests.workers.support.helpers import enqueue_jobs
from workers.api import Worker
from workers.runtime import RunState, WorkerRun, handoffs
from workers.runtime.slots import Slot

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def held(monkeypatch):
    """A worker run (its writer running) holding a fresh claim of `n` jobs of a new queue."""
    monkeypatch.setattr(handoffs, "FRESH_START", 600.0)  # every held job is "just claimed"
    runs: list = []

    def make(n: int):
        """n = 0: nothing enqueued or held (the test claims jobs of its own)."""
        queue = JobQueue()
        name = unique_queue("pipelined")
        enqueue_jobs(queue, name, n)
        worker = Worker(queue, name, lambda job: None, batch_size=max(n, 1),
                        batch_concurrency=1)  # fmt: skip
        run = WorkerRun(worker, threading.Event(), threading.Event())
        jobs: list = []
        if n:
            options = DequeueOptions(batch_size=n, lease_duration=timedelta(minutes=5))
            jobs = queue.dequeue(name, options)
            assert len(jobs) == n
            run.state.hold(jobs)
        writer = threading.Thread(target=run.writer.run, daemon=True)
        writer.start()
        runs.append((run, writer))
        slot = Slot(worker, run.state, run.allowance, run.loop, run._runaway, run.checks)
        return queue, name, run, slot, jobs

    yield make
    for run, writer in runs:
        run.hub.close()
        writer.join(10)


def next_checked(run, slot):
    """What a slot does after handing in an outcome without waiting: the next held job,
    checked by the writer's next write (or given its start marker)."""
    return slot._next(run.state.submit(wait=False, check_next=slot.checks))


def test_a_held_job_taken_back_since_the_claim_does_not_start(held):
    queue, name, run, slot, (lost, kept) = held(2)
    queue.retry_job(lost.id, timezone.now())  # an operator takes it back

    assert next_checked(run, slot) is None, "a run that is no longer this worker's started"
    assert run.state.stats.snapshot()["not_run"] == 1
    assert queue.get_job(lost.id).status == JobStatus.PENDING

    assert next_checked(run, slot) is kept
    stored = queue.get_job(kept.id)
    assert stored.status == JobStatus.RUNNING
    assert stored.started_at == kept.started_at, "the read wrote nothing: the claim's start"


def test_held_jobs_of_a_paused_queue_go_back_to_pending(held):
    queue, name, run, slot, jobs = held(2)
    queue.pause_queue(name)

    assert next_checked(run, slot) is None
    assert next_checked(run, slot) is None
    for job in jobs:
        stored = queue.get_job(job.id)
        assert (stored.status, stored.attempts) == (JobStatus.PENDING, 0), "attempt counted"


def test_an_outcome_handed_in_without_waiting_is_written_with_its_effects(held):
    queue, name, run, slot, (job,) = held(1)
    assert next_checked(run, slot) is job
    request = run.state.submit(finished=(job, JobOutcome.completed({"n": 1})), wait=False)
    assert request.written.wait(30), "the writer did not write it"
    stored = queue.get_job(job.id)
    assert (stored.status, stored.result, stored.attempts) == (JobStatus.COMPLETED, {"n": 1}, 1)
    assert run.state.running == {} and run.state.finishing == 0


def test_slots_wait_for_the_writer_once_it_is_that_far_behind():
    """No writer here: the requests stay unwritten, as behind a slow write."""
    run = RunState(stats=Worker(JobQueue(), "q", lambda job: None).stats, concurrency=2,
                   unwritten_limit=2)  # fmt: skip
    for _ in range(2):
        request = run.submit(finished=(object(), None), wait=False)
        assert not request.written.is_set()  # returned before its write
    handed_in = threading.Event()

    def third():
        run.submit(finished=(object(), None), wait=False)
        handed_in.set()

    slot = threading.Thread(target=third, daemon=True)
    slot.start()
    assert not handed_in.wait(0.2), "a slot went on with the writer two outcomes behind"
    with run.lock:
        waiting = run.outbox[-1]
    waiting.written.set()  # the writer catches up
    assert handed_in.wait(10)
    slot.join(10)


def test_a_held_job_of_a_fail_fast_batch_that_failed_since_the_claim_does_not_start(held):
    """The read tells a failed fail-fast batch as the start marker does: the held job is not
    started by it, and the start marker then fails it with its batch."""
    queue, name, run, slot, _ = held(0)
    jobs = [Job(queue_name=name, payload={"i": i}, max_attempts=1) for i in range(3)]
    batch_id = queue.enqueue_batch(
        JobBatch("ff", jobs=jobs, partial_failure_mode=PartialFailureMode.FAIL_FAST)
    )
    first, *others = queue.dequeue(name, DequeueOptions(batch_size=3))
    queue.finish_job_run(first, JobOutcome.failed("boom"))  # the batch fails
    assert queue.get_batch_status(batch_id).status == BatchStatus.FAILED
    run.state.hold(others)
    for _ in others:
        assert next_checked(run, slot) is None, "a held job of a failed batch started"
    for job in others:
        assert queue.get_job(job.id).status == JobStatus.FAILED
    assert run.state.stats.snapshot()["not_run"] == 2


def test_a_held_job_of_a_batch_not_failed_starts_on_the_read(held):
    queue, name, run, slot, _ = held(0)
    jobs = [Job(queue_name=name, payload={"i": i}) for i in range(2)]
    queue.enqueue_batch(
        JobBatch("ff", jobs=jobs, partial_failure_mode=PartialFailureMode.FAIL_FAST)
    )
    claimed = queue.dequeue(name, DequeueOptions(batch_size=2))
    run.state.hold(claimed)
    for job in claimed:
        assert next_checked(run, slot) is job
        assert queue.get_job(job.id).started_at == job.started_at, "no start marker"


def test_a_batch_job_goes_on_before_its_write_only_if_it_completed():
    batch_job = Job(queue_name="q", batch_id=uuid.uuid4())
    assert Slot._goes_on(batch_job, JobOutcome.completed({"n": 1}))
    assert not Slot._goes_on(batch_job, JobOutcome.failed("boom")), "it may fail its batch"
    assert Slot._goes_on(Job(queue_name="q"), JobOutcome.failed("boom"))
    assert not Slot._goes_on(Job(queue_name="q", workflow_id=uuid.uuid4()),
                             JobOutcome.completed(None))  # fmt: skip


def test_a_job_claimed_again_before_its_last_runs_done_keeps_its_new_run():
    """A job retried at once is claimable as soon as its outcome commits: the claimer may
    hold it, and a slot take it, before the writer has taken the last run off `running`.
    Seen as a KeyError that killed the writer thread (test_signals_worker, PostgreSQL)."""
    run = RunState(stats=Worker(JobQueue(), "q", lambda job: None).stats, concurrency=1,
                   unwritten_limit=2)  # fmt: skip
    last_run, new_run = Job(queue_name="q"), Job(queue_name="q")
    new_run.id = last_run.id  # the same job, claimed again: a new object, as a claim gives
    run.hold([last_run])
    assert run.take(wait=False).job is last_run
    run.submit(finished=(last_run, JobOutcome.completed(None)), wait=False)
    run.hold([new_run])
    assert run.take(wait=False).job is new_run  # before the writer's done of the last run
    run.done([last_run], written=True)
    assert run.running_jobs() == [new_run], "the new run was taken off with the last"
    run.done([new_run])
    assert run.running_jobs() == [] and run.finishing == 0
