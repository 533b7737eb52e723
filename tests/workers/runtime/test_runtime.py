"""The seed's worker scenarios (`mod worker` of Hammerwork 3.0's batch tests), on every
database, with real threads; assertions and timing margins as in the seed."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from queues.api import (
    BatchStatus,
    DequeueOptions,
    Job,
    JobBatch,
    JobQueue,
    JobStatus,
    PartialFailureMode,
)
from tests.conftest import unique_queue
from tests.workers.support.helpers import (
    Runs,
    counting_handler,
    enqueue_jobs,
    running,
    wait_for_status,
    wait_until,
)
from workers.api import RateLimit, ThrottleConfig, Worker

pytestmark = pytest.mark.django_db(transaction=True)

ms = lambda n: timedelta(milliseconds=n)  # noqa: E731


def gated_handler(runs: list, gate: threading.Semaphore):
    """Each run waits for a permit, so the test decides when jobs finish."""
    lock = threading.Lock()

    def handler(job):
        with lock:
            runs.append(job.id)
        gate.acquire()

    return handler


def test_batch_worker_processes_everything_once():
    """A pool of batch-mode workers runs every job exactly once."""
    jobs = 150
    queue = JobQueue()
    queue_name = unique_queue("batch_worker")
    ids = enqueue_jobs(queue, queue_name, jobs)
    runs = Runs()
    workers = [
        Worker(queue, queue_name, counting_handler(runs, 0.002))
        .with_poll_interval(ms(20))
        .with_batch_size(8)
        .with_batch_concurrency(3)
        for _ in range(3)
    ]
    with running(*workers):
        wait_for_status(queue, queue_name, "Completed", jobs, 60)
        counts, _ = runs.snapshot()
        assert len(counts) == jobs
        assert all(count == 1 for count in counts.values()), "a job ran twice"
        assert all(job_id in counts for job_id in ids)
        for job_id in ids[:20]:
            assert queue.get_job(job_id).attempts == 1


def test_held_jobs_are_not_reaped_while_waiting():
    """Jobs waiting their turn in a batch keep their leases: with a lease much shorter
    than the batch takes, a reaper running throughout reclaims none of them."""
    queue = JobQueue()
    queue_name = unique_queue("batch_held")
    ids = enqueue_jobs(queue, queue_name, 4)
    runs = Runs()
    # Lease 1.5s, heartbeat every 500ms; the batch runs ~4s one job at a time, so the
    # last jobs wait well past the lease. The margin leaves room for slow CI runners.
    worker = (
        Worker(queue, queue_name, counting_handler(runs, 1.0))
        .with_poll_interval(ms(20))
        .with_lease_duration(ms(1500))
        .with_batch_size(4)
        .with_batch_concurrency(1)
    )
    with running(worker):
        deadline = time.monotonic() + 20
        while True:
            recovery = queue.requeue_stale_jobs(None)
            for job_id in ids:
                assert job_id not in recovery.requeued and job_id not in recovery.dead, (
                    f"job {job_id} was reaped while held by a live batch worker"
                )
            counts = queue.get_job_counts_by_status(queue_name)
            if counts.get("Completed") == 4:
                break
            assert time.monotonic() < deadline, f"batch did not finish: {counts}"
            time.sleep(0.05)
        counts, _ = runs.snapshot()
        assert len(counts) == 4
        assert all(count == 1 for count in counts.values())
        for job_id in ids:
            assert queue.get_job(job_id).attempts == 1


def test_shutdown_releases_unstarted_jobs():
    """On shutdown, the claimed jobs that have not started go straight back to Pending
    (attempt not counted) while the running one finishes."""
    queue = JobQueue()
    queue_name = unique_queue("batch_shutdown")
    ids = enqueue_jobs(queue, queue_name, 5)
    runs = Runs()
    worker = (
        Worker(queue, queue_name, counting_handler(runs, 0.8))
        .with_poll_interval(ms(20))
        .with_shutdown_grace_period(timedelta(seconds=10))
        .with_batch_size(5)
        .with_batch_concurrency(1)
    )
    with running(worker) as (run,):
        # All five are claimed in one batch, and the first starts.
        wait_for_status(queue, queue_name, "Running", 5, 10)
        wait_until(lambda: runs.snapshot()[0], 10, "no job started")

        requested = time.monotonic()
        run.shutdown()
        assert time.monotonic() - requested < 5

    started = list(runs.snapshot()[0])
    assert len(started) == 1, "only the first job of the batch started"
    for job_id in ids:
        job = queue.get_job(job_id)
        if job_id in started:
            assert job.status == JobStatus.COMPLETED, "the running job finished"
        else:
            assert job.status == JobStatus.PENDING, "an unstarted job was not released"
            assert job.attempts == 0
            assert job.started_at is None

    # The released jobs run normally afterwards.
    claimed = queue.dequeue(queue_name, DequeueOptions.batch(10))
    assert len(claimed) == 4


def test_pause_releases_unstarted_jobs():
    """Pausing the queue stops a batch-mode worker from starting the jobs it already
    claimed: they go back to Pending (attempt not counted) and run after a resume."""
    queue = JobQueue()
    queue_name = unique_queue("batch_pause")
    ids = enqueue_jobs(queue, queue_name, 3)
    runs: list = []
    gate = threading.Semaphore(0)
    worker = (
        Worker(queue, queue_name, gated_handler(runs, gate))
        .with_poll_interval(ms(50))
        .with_batch_size(3)
        .with_batch_concurrency(1)
    )
    with running(worker):
        # All three are claimed in one batch, and the first starts.
        wait_until(lambda: runs, 20, "no job started")
        wait_for_status(queue, queue_name, "Running", 3, 20)

        # Pause, wait longer than the poll interval, and let the running job finish.
        queue.pause_queue(queue_name, "test")
        time.sleep(0.3)
        gate.release(1)

        # The two held jobs are handed back instead of started.
        wait_for_status(queue, queue_name, "Pending", 2, 30)
        started = list(runs)
        assert len(started) == 1, "a held job started while the queue was paused"
        for job_id in ids:
            if job_id not in started:
                job = queue.get_job(job_id)
                assert job.status == JobStatus.PENDING
                assert job.attempts == 0

        # After a resume they run.
        queue.resume_queue(queue_name, "test")
        gate.release(10)
        wait_for_status(queue, queue_name, "Completed", 3, 30)
        assert len(runs) == 3, f"each job ran once: {runs}"


def test_fail_fast_batch_fails_held_jobs():
    """#94: when a fail-fast batch fails, the jobs of it that a batch-mode worker has
    claimed but not started are failed like its Pending jobs instead of run."""
    queue = JobQueue()
    queue_name = unique_queue("batch_failfast")
    jobs = [Job(queue_name=queue_name, payload={"i": i}, max_attempts=1) for i in range(4)]
    batch_id = queue.enqueue_batch(
        JobBatch("failfast", jobs=jobs, partial_failure_mode=PartialFailureMode.FAIL_FAST)
    )

    # Every run fails, after a pause much longer than the poll interval so that the
    # worker checks the batch before it starts the next held job.
    runs: list = []

    def handler(job):
        runs.append(job.id)
        time.sleep(0.5)
        raise RuntimeError("boom")

    worker = (
        Worker(queue, queue_name, handler)
        .with_poll_interval(ms(50))
        .with_batch_size(4)
        .with_batch_concurrency(1)
    )
    with running(worker):
        # The first job dies; the three held ones are failed without running.
        wait_for_status(queue, queue_name, "Failed", 3, 30)
        wait_for_status(queue, queue_name, "Dead", 1, 30)
        started = list(runs)
        assert len(started) == 1, "a held job of a failed batch ran"
        for job in queue.get_batch_jobs(batch_id):
            if job.id == started[0]:
                assert job.status == JobStatus.DEAD
            else:
                assert job.status == JobStatus.FAILED
                assert (job.error_message or "").startswith("Batch failed"), (
                    f"unexpected error: {job.error_message!r}"
                )
        assert queue.get_batch_status(batch_id).status == BatchStatus.FAILED


def test_held_jobs_record_their_actual_start():
    """#94: a job that waited in a claimed batch records when it actually started, so its
    wait is not counted as processing time: each job of a sequential batch starts after
    the previous one completed."""
    queue = JobQueue()
    queue_name = unique_queue("batch_start")
    enqueue_jobs(queue, queue_name, 3)
    runs = Runs()
    worker = (
        Worker(queue, queue_name, counting_handler(runs, 0.2))
        .with_poll_interval(ms(20))
        .with_batch_size(3)
        .with_batch_concurrency(1)
    )
    with running(worker):
        wait_for_status(queue, queue_name, "Completed", 3, 30)

    finished = []
    for job_id in runs.snapshot()[0]:
        job = queue.get_job(job_id)
        assert job.attempts == 1
        finished.append((job.started_at, job.completed_at))
    assert len(finished) == 3
    finished.sort()
    for (_, previous_completed), (started, _) in zip(finished, finished[1:]):
        assert started >= previous_completed, (
            f"a held job's start time ({started}) is before the previous job of its "
            f"sequential batch completed ({previous_completed}): its wait counted as "
            "processing time"
        )


def test_lost_held_job_refunds_its_rate_limit_token():
    """#94: a held job skipped because its lease was lost refunds its rate limit token.
    With a 2-token burst that refills once per half hour, the worker can only claim the
    lost job again with the refunded token."""
    queue = JobQueue()
    queue_name = unique_queue("batch_lost_token")
    ids = enqueue_jobs(queue, queue_name, 2)
    runs: list = []
    gate = threading.Semaphore(0)
    worker = (
        Worker(queue, queue_name, gated_handler(runs, gate))
        .with_poll_interval(ms(20))
        .with_rate_limit(RateLimit.per_hour(2))
        .with_batch_size(2)
        .with_batch_concurrency(1)
    )
    with running(worker):
        # Both jobs are claimed with the two tokens, and the first starts.
        wait_for_status(queue, queue_name, "Running", 2, 20)
        wait_until(lambda: runs, 20, "no job started")
        first = runs[0]
        held = next(job_id for job_id in ids if job_id != first)

        # An operator requeues the held job, so this worker's claim of it is lost.
        queue.retry_job(held, timezone.now())
        gate.release(10)

        # The worker skips its stale claim and, with the refunded token, claims and runs
        # the job again.
        wait_for_status(queue, queue_name, "Completed", 2, 30)
        assert runs.count(held) == 1


def test_batch_worker_respects_throttle():
    """A throttle's max_concurrent bounds the jobs a batch-mode pool holds (claims or
    runs) at once, whatever the batch size and concurrency."""
    jobs = 12
    queue = JobQueue()
    queue_name = unique_queue("batch_throttle")
    enqueue_jobs(queue, queue_name, jobs)
    lock = threading.Lock()
    state = {"active": 0, "peak": 0, "done": 0}

    def handler(job):
        with lock:
            state["active"] += 1
            state["peak"] = max(state["peak"], state["active"])
        time.sleep(0.1)
        with lock:
            state["active"] -= 1
            state["done"] += 1

    template = (
        Worker(queue, queue_name, handler)
        .with_poll_interval(ms(20))
        .with_throttle_config(ThrottleConfig(max_concurrent=2))
        .with_batch_size(10)
        .with_batch_concurrency(10)
    )
    # Two clones share the throttle.
    with running(template.clone(), template):
        deadline = time.monotonic() + 30
        while state["done"] < jobs:
            counts = queue.get_job_counts_by_status(queue_name)
            held = counts.get("Running", 0)
            assert held <= 2, f"{held} jobs held at once with max_concurrent 2"
            assert time.monotonic() < deadline, "jobs did not finish"
            time.sleep(0.01)
        assert state["peak"] <= 2
        wait_for_status(queue, queue_name, "Completed", jobs, 10)


def test_batch_worker_respects_rate_limit():
    """A rate limit caps how many jobs a batch claims: with a burst of 3 and 3 jobs a
    second, a batch size of 10 claims at most the tokens available."""
    jobs = 9
    queue = JobQueue()
    queue_name = unique_queue("batch_rate")
    enqueue_jobs(queue, queue_name, jobs)
    starts: list[float] = []
    worker = (
        Worker(queue, queue_name, lambda job: starts.append(time.monotonic()))
        .with_poll_interval(ms(20))
        .with_rate_limit(RateLimit.per_second(3))
        .with_batch_size(10)
        .with_batch_concurrency(10)
    )
    began = time.monotonic()
    with running(worker):
        # The first poll can take the 3-token burst only; the queue keeps the rest.
        wait_until(lambda: starts, 10, "no job started")
        counts = queue.get_job_counts_by_status(queue_name)
        # Tokens refill one every 333ms, so by the time the counts are read (late on a slow
        # runner) a few more claims may be legitimate.
        elapsed = time.monotonic() - began
        allowed = min(3 + int(elapsed * 1000) // 333, jobs)
        assert counts.get("Pending", 0) >= jobs - allowed, (
            f"a batch claimed more jobs than it had rate limit tokens ({allowed} allowed "
            f"after {elapsed:.3f}s): {counts}"
        )

        wait_for_status(queue, queue_name, "Completed", jobs, 20)
        # A burst of 3, then one token every 333ms: the k-th job (from 1) cannot start
        # before (k - 3) / 3 seconds.
        assert len(starts) == jobs
        for index, start in enumerate(sorted(starts)):
            earliest = 0.333 * max(index + 1 - 3, 0)
            at = start - began
            assert at + 0.1 >= earliest, (
                f"job {index + 1} started at {at:.3f}s, before its rate limit token "
                f"({earliest:.3f}s)"
            )
