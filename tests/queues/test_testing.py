"""TestQueue's own behaviour: its mock clock, its copies and its lock. No database: pytest-django
refuses any query from a test without the django_db mark, so these also prove it needs none.
(The behaviour it shares with the database queue is held by the conformance suite.)"""

from __future__ import annotations

import random
import threading
import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest

from queues.api import (
    CANCELLED,
    LOST,
    RELEASED,
    STARTED,
    BatchStatus,
    DequeueOptions,
    InvalidJob,
    InvalidQueueName,
    InvalidWorkflow,
    Job,
    JobBatch,
    JobGroup,
    JobNotFound,
    JobOutcome,
    JobPriority,
    JobStatus,
    MockClock,
    PartialFailureMode,
    PriorityWeights,
    RetryStrategy,
    TestQueue,
)

T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def queue() -> TestQueue:
    return TestQueue(MockClock(T0), rng=random.Random(7))


def lease(seconds: int) -> DequeueOptions:
    return DequeueOptions(lease_duration=timedelta(seconds=seconds))


# The clock ---------------------------------------------------------------------------------
def test_default_clock_is_a_mock_clock_at_the_real_now():
    before = datetime.now(UTC)
    queue = TestQueue()
    assert isinstance(queue.clock, MockClock)
    assert before <= queue.now() <= datetime.now(UTC)
    frozen = queue.now()
    assert queue.now() == frozen, "the mock clock moved on its own"


def test_enqueue_stamps_the_mock_time_and_keeps_the_delay(queue):
    due_now = Job(queue_name="q")
    later = Job(queue_name="q", scheduled_at=datetime.now(UTC) + timedelta(minutes=10))
    queue.enqueue_many([due_now, later])
    stored = queue.get_job(later.id)
    assert stored.created_at == T0
    assert abs(stored.scheduled_at - (T0 + timedelta(minutes=10))) < timedelta(seconds=1)
    assert queue.get_job(due_now.id).scheduled_at == T0
    assert [job.id for job in queue.dequeue("q", DequeueOptions.batch(5))] == [due_now.id]


def test_a_scheduled_job_is_claimable_once_the_clock_passes_its_time(queue):
    job = Job(queue_name="q")
    job.scheduled_at = job.created_at + timedelta(hours=1)
    queue.enqueue(job)
    queue.clock.advance(timedelta(minutes=59, seconds=59))
    assert queue.dequeue_one("q") is None
    queue.clock.advance(timedelta(seconds=1))
    claimed = queue.dequeue_one("q")
    assert claimed.id == job.id and claimed.started_at == T0 + timedelta(hours=1)


def test_leases_expire_only_when_the_clock_is_advanced(queue):
    queue.enqueue(Job(queue_name="q", max_attempts=2))
    run = queue.dequeue_one("q", lease(30))
    assert run.lease_expires_at == T0 + timedelta(seconds=30)
    assert queue.requeue_stale_jobs().requeued == []
    queue.clock.advance(timedelta(seconds=30))
    assert queue.requeue_stale_jobs().requeued == [], "a lease expiring now is still held"
    assert queue.heartbeat_job(run, timedelta(seconds=30))
    queue.clock.advance(timedelta(seconds=31))
    assert queue.requeue_stale_jobs("q", ran_by="test").requeued == [run.id]
    assert queue.finish_job_run(run, JobOutcome.completed()) is None, "a reaped run wrote"
    stored = queue.get_job(run.id)
    assert stored.status == JobStatus.PENDING and stored.scheduled_at == queue.now()

    second = queue.dequeue_one("q", lease(5))
    queue.clock.advance(timedelta(seconds=6))
    assert queue.requeue_stale_jobs().dead == [second.id], "its attempts were used up"
    assert queue.get_job(second.id).status == JobStatus.DEAD
    runs = queue.reaper_runs
    assert [(r.ran_by, r.queue_name, r.requeued_count, r.dead_count) for r in runs] == [
        ("", None, 0, 0),
        ("", None, 0, 0),
        ("test", "q", 1, 0),
        ("", None, 0, 1),
    ]
    assert runs[2].ran_at == T0 + timedelta(seconds=61)


def test_backoff_delays_are_counted_on_the_mock_clock(queue):
    strategy = RetryStrategy.linear(timedelta(seconds=10), timedelta(seconds=20))
    queue.enqueue(Job(queue_name="q", max_attempts=3, retry_strategy=strategy))
    delays = []
    for _ in range(2):
        run = queue.dequeue_one("q")
        recorded = queue.finish_job_run(run, JobOutcome.failed("boom"))
        assert recorded.status == JobStatus.PENDING
        delay = queue.get_job(run.id).scheduled_at - queue.now()
        delays.append(delay)
        queue.clock.advance(delay - timedelta(microseconds=1))
        assert queue.dequeue_one("q") is None, "claimed before its backoff ended"
        queue.clock.advance(timedelta(microseconds=1))
    assert delays == [timedelta(seconds=10), timedelta(seconds=30)]
    run = queue.dequeue_one("q")
    assert run.attempts == 3
    assert queue.finish_job_run(run, JobOutcome.failed("boom")).status == JobStatus.DEAD


def test_a_recurring_job_is_rescheduled_by_the_mock_clock(queue):
    job_id = queue.enqueue(Job(queue_name="q", cron_schedule="0 * * * *"))
    assert queue.get_job(job_id).scheduled_at == datetime(2030, 1, 1, 13, 0, tzinfo=UTC)
    assert queue.dequeue_one("q") is None
    queue.clock.set(datetime(2030, 1, 1, 13, 0, 5, tzinfo=UTC))
    run = queue.dequeue_one("q")
    recorded = queue.finish_job_run(run, JobOutcome.completed())
    assert recorded.status == JobStatus.PENDING
    assert recorded.next_run_at == datetime(2030, 1, 1, 14, 0, tzinfo=UTC)
    assert queue.get_job(job_id).attempts == 0


# Runs told apart by their token, not their start time ------------------------------------
def test_a_stale_run_is_fenced_although_the_clock_did_not_move(queue):
    queue.enqueue(Job(queue_name="q"))
    first = queue.dequeue_one("q")
    assert queue.release_job_run(first)
    second = queue.dequeue_one("q")
    assert second.started_at == first.started_at and second.run_token != first.run_token
    assert not queue.release_job_run(first)
    assert not queue.heartbeat_job(first, timedelta(seconds=5))
    assert queue.heartbeat_jobs([first, second], timedelta(seconds=5)) == 1
    assert queue.start_claimed_run(first) == LOST
    assert queue.finish_job_run(first, JobOutcome.failed("stale")) is None
    assert queue.get_job(second.id).status == JobStatus.RUNNING
    assert queue.finish_job_run(second, JobOutcome.completed(7)).status == JobStatus.COMPLETED


def test_start_claimed_run_releases_in_a_paused_queue_and_cancels_in_a_failed_batch(queue):
    batch = JobBatch("b", [Job(queue_name="q") for _ in range(3)], PartialFailureMode.FAIL_FAST)
    queue.enqueue_batch(batch)
    runs = queue.dequeue("q", DequeueOptions.batch(3))
    assert queue.start_claimed_run(runs[0]) == STARTED
    queue.pause_queue("q")
    assert queue.start_claimed_run(runs[1]) == RELEASED
    queue.resume_queue("q")
    queue.finish_job_run(runs[0], JobOutcome.dead("boom"))
    assert queue.start_claimed_run(runs[2]) == CANCELLED
    status = queue.get_batch_status(batch.id)
    assert (status.status, status.failed_jobs, status.pending_jobs) == (BatchStatus.FAILED, 3, 0)
    expected = f"Batch failed: job {runs[0].id} failed (fail-fast mode)"
    assert status.job_errors[runs[2].id] == expected
    assert status.job_errors[runs[1].id] == expected, "the released job was failed as unstarted"


# Copies -----------------------------------------------------------------------------------
def test_the_store_shares_no_object_with_its_callers(queue):
    job = Job(queue_name="q", payload={"items": [1, 2]})
    queue.enqueue(job)
    job.payload["items"].append(3)
    job.priority = JobPriority.CRITICAL
    fetched = queue.get_job(job.id)
    assert fetched is not queue.get_job(job.id)
    assert fetched.payload == {"items": [1, 2]} and fetched.priority == JobPriority.NORMAL
    fetched.payload["items"].clear()
    fetched.status = JobStatus.COMPLETED
    run = queue.dequeue_one("q")
    assert run.payload == {"items": [1, 2]}
    run.payload["items"].append(9)
    result = {"sent": ["a"]}
    queue.finish_job_run(run, JobOutcome.completed(result))
    result["sent"].append("b")
    stored = queue.get_job(job.id)
    assert stored.payload == {"items": [1, 2]} and stored.result == {"sent": ["a"]}
    queue.get_batch_jobs(job.id)  # an unknown batch is an empty list
    queue.reaper_runs.append("not stored")
    assert queue.reaper_runs == []


def test_json_columns_are_stored_as_the_database_stores_them(queue):
    job_id = queue.enqueue(Job(queue_name="q", payload={"pair": (1, 2), 3: "three"}))
    assert queue.get_job(job_id).payload == {"pair": [1, 2], "3": "three"}


# Errors write nothing ---------------------------------------------------------------------
def test_a_refused_enqueue_writes_nothing(queue):
    good = Job(queue_name="q")
    with pytest.raises(InvalidQueueName):
        queue.enqueue_many([good, Job(queue_name="")])
    with pytest.raises(InvalidWorkflow):
        queue.enqueue_many([good, Job(queue_name="q", depends_on=[Job(queue_name="q").id])])
    assert queue.get_job(good.id) is None
    queue.enqueue(good)
    with pytest.raises(InvalidJob):
        queue.enqueue(good)
    assert sum(queue.get_job_counts_by_status("q").values()) == 1
    with pytest.raises(JobNotFound):
        queue.get_batch_status(good.id)
    with pytest.raises(InvalidJob):
        queue.get_job("not-a-uuid")


def test_a_workflow_failure_fails_its_waiting_jobs(queue):
    a, b, c = (Job(queue_name="q") for _ in range(3))
    queue.enqueue_workflow(JobGroup("w").add_job(a).then(b).then(c))
    run = queue.dequeue_one("q")
    recorded = queue.finish_job_run(run, JobOutcome.dead("boom"))
    assert recorded.cancelled == sorted([b.id, c.id])
    error = f"Workflow failed: job {a.id} failed (fail-fast policy)"
    assert queue.get_job(c.id).error_message == error
    queue.retry_job(a.id)
    assert queue.get_job(a.id).attempts == 0
    assert queue.get_job(b.id).status == JobStatus.FAILED


# Threads ----------------------------------------------------------------------------------
def test_concurrent_claims_never_claim_a_job_twice(queue):
    jobs = [Job(queue_name="q", priority=JobPriority(i % 5)) for i in range(300)]
    queue.enqueue_many(jobs)
    options = [
        DequeueOptions(),
        DequeueOptions.batch(7),
        DequeueOptions.batch(5).with_priority_weights(PriorityWeights()),
        DequeueOptions.batch(3).with_priority_weights(PriorityWeights.strict()),
    ]
    claims: list[list] = [[] for _ in range(8)]
    start = threading.Barrier(8)

    def claim(n: int) -> None:
        start.wait()
        while batch := queue.dequeue("q", options[n % 4]):
            claims[n].extend(batch)
            for job in batch[::2]:
                assert queue.finish_job_run(job, JobOutcome.completed()) is not None

    threads = [threading.Thread(target=claim, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    ids = [job.id for claimed in claims for job in claimed]
    assert len(ids) == len(set(ids)) == 300
    assert set(ids) == {job.id for job in jobs}
    assert all(job.attempts == 1 for claimed in claims for job in claimed)
    counts = queue.get_job_counts_by_status("q")
    assert counts["Running"] + counts["Completed"] == 300


def test_concurrent_outcomes_keep_the_batch_tallies(queue):
    batch = JobBatch("b", [Job(queue_name="q") for _ in range(200)])
    queue.enqueue_batch(batch)
    runs = queue.dequeue("q", DequeueOptions.batch(200))

    def finish(part: list) -> None:
        for i, job in enumerate(part):
            queue.finish_job_run(job, JobOutcome.completed() if i % 4 else JobOutcome.dead("x"))

    threads = [threading.Thread(target=finish, args=(runs[n::4],)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    status = queue.get_batch_status(batch.id)
    assert (status.completed_jobs, status.failed_jobs) == (148, 52)
    assert status.status == BatchStatus.PARTIALLY_FAILED


def test_times_are_stored_in_utc(queue):
    paris = timezone(timedelta(hours=1))
    job = Job(queue_name="q", scheduled_at=T0.astimezone(paris), created_at=T0.astimezone(paris))
    queue.enqueue(job)
    assert queue.get_job(job.id).scheduled_at.tzinfo == UTC
    run = queue.dequeue_one("q")
    queue.finish_job_run(run, JobOutcome.retry(T0.astimezone(paris) + timedelta(hours=1)))
    stored = queue.get_job(job.id)
    assert stored.scheduled_at == T0 + timedelta(hours=1) and stored.scheduled_at.tzinfo == UTC


def test_get_all_jobs_lists_every_queue_oldest_first(queue):
    first = queue.enqueue(Job(queue_name="a"))
    queue.clock.advance(timedelta(seconds=1))
    second = queue.enqueue(Job(queue_name="b"))
    assert [job.id for job in queue.get_all_jobs()] == [first, second]


def test_a_claim_can_carry_the_callers_run_token(queue):
    queue.enqueue_many([Job(queue_name="q"), Job(queue_name="q")])
    token = uuid.uuid4()
    claimed = queue.dequeue("q", DequeueOptions.batch(2), run_token=token)
    assert {job.run_token for job in claimed} == {token}
    assert queue.heartbeat_jobs(claimed, timedelta(seconds=5)) == 2


def test_finish_job_runs_leaves_the_jobs_as_they_were_when_it_fails(queue):
    queue.enqueue(Job(queue_name="q"))
    run = queue.dequeue_one("q")
    with pytest.raises(TypeError):
        queue.finish_job_runs([(run, JobOutcome.completed()), (run, "not an outcome")])
    assert run.status == JobStatus.RUNNING and run.run_token is not None
    recorded = queue.finish_job_runs([(run, JobOutcome.completed())])
    assert [r.status for r in recorded] == [JobStatus.COMPLETED]
    assert run.status == JobStatus.COMPLETED and run.run_token is None
    assert queue.finish_job_runs([(run, JobOutcome.completed())]) == [None]
