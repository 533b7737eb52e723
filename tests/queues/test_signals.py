"""The lifecycle signals on the engine's API, on the database and in memory: each sent once
its transition is committed (another connection sees it), with its documented arguments; a
caller's transaction defers them to its commit (none if it rolls back); a receiver that
raises changes nothing; nothing is registered while no receiver listens."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from django.db import transaction

from queues import signals
from queues.api import DequeueOptions, Job, JobOutcome, JobQueue, JobStatus, RetryStrategy
from queues.testing import TestQueue
from tests.queues.conftest import unique_queue
from tests.signal_events import Recorder, connected

LEASE = timedelta(seconds=60)


def recorder_for(queue) -> Recorder:
    if isinstance(queue, TestQueue):  # read from another thread: the store's lock is free
        return Recorder(read_status=lambda job_id: queue.get_job(job_id).status)
    return Recorder()


def fixed(seconds: float) -> dict:
    return RetryStrategy.fixed(timedelta(seconds=seconds)).to_dict()


def test_every_transition_of_a_run_is_sent_after_its_commit(queue):
    name = unique_queue("sig_runs")
    recorder = recorder_for(queue)
    with connected(recorder):
        ok = queue.enqueue(Job(queue_name=name, payload={"n": 1}))
        first = queue.dequeue_one(name)
        queue.clock.advance(timedelta(seconds=2))
        queue.finish_job_run(first, JobOutcome.completed({"sum": 3}))
        flaky = queue.enqueue(
            Job(queue_name=name, payload={"n": 2}, max_attempts=2, retry_strategy=fixed(10))
        )
        second = queue.dequeue_one(name)
        failed_at = queue.now()
        queue.finish_job_run(second, JobOutcome.failed("boom", exception_class="x.Boom"))
        queue.clock.advance(timedelta(seconds=11))
        again = queue.dequeue_one(name)
        queue.finish_job_run(again, JobOutcome.failed("boom again"))

    assert first.id == ok and second.id == flaky == again.id
    assert recorder.names(ok) == ["job_enqueued", "job_started", "job_succeeded"]
    enqueued, started, succeeded = recorder.of(ok)
    assert (enqueued["queue_name"], enqueued["attempt"], enqueued["job"].id) == (name, 0, ok)
    assert enqueued["sender"] is type(queue)
    assert started["attempt"] == 1 and started["committed_status"] == JobStatus.RUNNING
    assert succeeded["result"] == {"sum": 3} and succeeded["run_time"] == pytest.approx(2.0)
    assert succeeded["committed_status"] == JobStatus.COMPLETED
    assert not any(event["in_transaction"] for event in recorder.events)

    assert recorder.names(flaky) == [
        "job_enqueued", "job_started", "job_failed", "job_retried",
        "job_started", "job_failed", "job_dead",
    ]  # fmt: skip
    events = recorder.of(flaky)
    failed, retried = events[2], events[3]
    assert (failed["attempt"], failed["status"], failed["error"]) == (1, "Pending", "boom")
    assert failed["exception_class"] == "x.Boom"
    assert failed["committed_status"] == JobStatus.PENDING
    assert retried["run_at"] == failed_at + timedelta(seconds=10) and retried["attempt"] == 1
    last_failed, dead = events[5], events[6]
    assert (last_failed["attempt"], last_failed["status"]) == (2, JobStatus.DEAD)
    assert (dead["error"], dead["operator"], dead["committed_status"]) == (
        "boom again", False, JobStatus.DEAD,
    )  # fmt: skip


def test_the_reaper_sends_reaped_then_retried_or_dead(queue):
    name = unique_queue("sig_reap")
    recorder = recorder_for(queue)
    again = queue.enqueue(Job(queue_name=name, payload={}, max_attempts=2))
    last = queue.enqueue(Job(queue_name=name, payload={}, max_attempts=1))
    queue.dequeue(name, DequeueOptions.batch(2).with_lease_duration(LEASE))
    queue.clock.advance(LEASE + timedelta(seconds=1))
    with connected(recorder):
        recovery = queue.requeue_stale_jobs()
    assert recovery.requeued == [again] and recovery.dead == [last]
    assert recorder.names(again) == ["job_reaped", "job_retried"]
    reaped = recorder.of(again)[0]
    assert (reaped["status"], reaped["attempt"]) == (JobStatus.PENDING, 1)
    assert reaped["run_time"] == pytest.approx(61.0) and "lease expired" in reaped["error"]
    assert reaped["committed_status"] == JobStatus.PENDING
    assert recorder.names(last) == ["job_reaped", "job_dead"]
    assert recorder.of(last)[1]["committed_status"] == JobStatus.DEAD


def test_operators_actions_are_sent_with_operator_true(queue):
    name = unique_queue("sig_ops")
    recorder = recorder_for(queue)
    running = queue.enqueue(Job(queue_name=name, payload={}))
    assert queue.dequeue_one(name).id == running
    pending = queue.enqueue(Job(queue_name=name, payload={}))
    with connected(recorder):
        queue.cancel_job(pending, reason="not wanted")
        queue.mark_job_dead(running, reason="poison")
        queue.retry_job(pending)
    cancelled, retried = recorder.of(pending)
    assert (cancelled.name, cancelled["error"], cancelled["operator"]) == (
        "job_cancelled", "not wanted", True,
    )  # fmt: skip
    assert cancelled["run_time"] is None and cancelled["committed_status"] == JobStatus.FAILED
    assert (retried.name, retried["operator"], retried["committed_status"]) == (
        "job_retried", True, JobStatus.PENDING,
    )  # fmt: skip
    (dead,) = recorder.of(running)
    assert (dead.name, dead["error"], dead["attempt"]) == ("job_dead", "poison", 1)


def test_a_receiver_that_raises_changes_nothing(queue, caplog):
    name = unique_queue("sig_raise")

    def broken(signal, sender, **arguments):
        raise RuntimeError(f"receiver broke on {signal.name}")

    with connected(broken), caplog.at_level(logging.ERROR, logger="queues.signals"):
        job_id = queue.enqueue(Job(queue_name=name, payload={}))
        job = queue.dequeue_one(name)
        recorded = queue.finish_job_run(job, JobOutcome.completed())
    assert job.id == job_id and recorded.status == JobStatus.COMPLETED
    assert queue.get_job(job_id).status == JobStatus.COMPLETED
    logged = [r for r in caplog.records if r.name == "queues.signals"]
    assert [r.getMessage().split(" (")[0] for r in logged] == [
        "a receiver of job_enqueued", "a receiver of job_started", "a receiver of job_succeeded",
    ]  # fmt: skip
    assert all(str(r.exc_info[1]).startswith("receiver broke on") for r in logged)


def test_nothing_is_registered_without_a_receiver(queue, monkeypatch):
    assert not any(signal.receivers for signal in signals.ALL)
    calls = []
    monkeypatch.setattr(queue.store, "on_commit", calls.append, raising=False)
    name = unique_queue("sig_none")
    queue.enqueue_many([Job(queue_name=name, payload={}) for _ in range(3)])
    jobs = queue.dequeue(name, DequeueOptions.batch(3))
    queue.finish_job_runs([(job, JobOutcome.completed()) for job in jobs])
    assert calls == []
    # And one receiver: one registration per write (enqueue, claim) or per job's end.
    with connected(lambda **kw: None, signals.job_succeeded, signals.job_started):
        queue.enqueue_many([Job(queue_name=name, payload={}) for _ in range(2)])
        jobs = queue.dequeue(name, DequeueOptions.batch(2))
        queue.finish_job_runs([(job, JobOutcome.completed()) for job in jobs])
    assert len(calls) == 3


@pytest.mark.django_db(transaction=True)
def test_in_a_callers_transaction_they_wait_for_its_commit():
    queue = JobQueue()
    name = unique_queue("sig_caller")
    recorder = Recorder()
    with connected(recorder):
        with transaction.atomic():
            kept = queue.enqueue(Job(queue_name=name, payload={}))
            assert recorder.events == [], "sent inside the caller's transaction"
        assert recorder.names(kept) == ["job_enqueued"]
        assert recorder.of(kept)[0]["committed_status"] == JobStatus.PENDING
        with pytest.raises(RuntimeError), transaction.atomic():
            dropped = queue.enqueue(Job(queue_name=name, payload={}))
            raise RuntimeError("the caller rolls back")
        with transaction.atomic():
            job = queue.dequeue_one(name)
            queue.finish_job_run(job, JobOutcome.completed())
            assert recorder.names(kept) == ["job_enqueued"]
    assert recorder.names(dropped) == []
    assert recorder.names(kept) == ["job_enqueued", "job_started", "job_succeeded"]
    assert not any(event["in_transaction"] for event in recorder.events)


def test_a_handler_rescheduling_itself_is_retried_not_failed(queue):
    name = unique_queue("sig_snooze")
    recorder = recorder_for(queue)
    job_id = queue.enqueue(Job(queue_name=name, payload={}))
    job = queue.dequeue_one(name)
    later = queue.now() + timedelta(minutes=5)
    with connected(recorder):
        queue.finish_job_run(job, JobOutcome.retry(later))
    (retried,) = recorder.of(job_id)
    assert (retried.name, retried["run_at"], retried["error"]) == ("job_retried", later, None)
    assert retried["committed_status"] == JobStatus.PENDING
