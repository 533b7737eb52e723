"""`JobQueue.explain`: why a job waits, each reason with its evidence, on every database and in
memory (`queue` runs each test on both): its time, a backoff after attempt k, its
dependencies, its queue's pause, limit and rate, no live worker, the jobs ahead, and a job
that could run now."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest

from queues.api import DequeueOptions, Job, JobPriority, JobStatus
from queues.engine.outcomes import JobOutcome
from queues.exceptions import InvalidJob, JobNotFound
from queues.models import WorkerProcess
from queues.store.base import Match
from tests.queues.conftest import unique_queue


def serve(queue, *names: str, beat_ago=timedelta(0)) -> None:
    """A worker process serving `names`, that beat `beat_ago` before the queue's now."""
    beat = queue.now() - beat_ago
    row = WorkerProcess(hostname="host", pid=7, queues=list(names), started_at=beat,
                        last_heartbeat_at=beat)  # fmt: skip
    queue.store.register_process(row)


def reason(answer, code):
    found = [r for r in answer.reasons if r.code == code]
    assert found, f"no {code} among {answer.codes()}"
    return found[0]


def test_a_due_job_with_a_live_worker_could_run_now(queue):
    name = unique_queue("ready")
    serve(queue, name)
    job_id = queue.enqueue(Job(queue_name=name, payload={}))
    answer = queue.explain(str(job_id))
    assert answer.runnable and answer.codes() == ["ready"]


def test_no_live_worker_serves_the_queue(queue):
    name = unique_queue("idle")
    serve(queue, "elsewhere")
    serve(queue, name, beat_ago=timedelta(minutes=5))  # stale: not alive
    answer = queue.explain(queue.enqueue(Job(queue_name=name, payload={})))
    evidence = reason(answer, "no_worker").evidence
    assert not answer.runnable
    assert "elsewhere" in evidence["queues_served"] and name not in evidence["queues_served"]


def test_scheduled_for_later_and_paused_say_when_and_by_whom(queue):
    name = unique_queue("later")
    serve(queue, name)
    at = queue.now() + timedelta(hours=2)
    job_id = queue.enqueue(Job(queue_name=name, payload={}, scheduled_at=at))
    queue.pause_queue(name, paused_by="alice", reason="deploy")
    answer = queue.explain(job_id)
    assert (
        reason(answer, "scheduled").evidence["at"]
        == queue.get_job(job_id).scheduled_at
        > at - timedelta(minutes=1)
    )
    paused = reason(answer, "paused")
    assert paused.evidence["paused_by"] == "alice" and paused.evidence["reason"] == "deploy"
    assert "alice" in paused.text and not answer.runnable
    queue.resume_queue(name)
    queue.clock.advance(timedelta(hours=3))
    serve(queue, name)
    assert queue.explain(job_id).runnable


def test_a_backoff_names_the_attempt_and_its_error(queue):
    name = unique_queue("backoff")
    serve(queue, name)
    queue.enqueue(Job(queue_name=name, payload={}, max_attempts=3))
    run = queue.dequeue_one(name)
    until = queue.now() + timedelta(minutes=5)
    queue.finish_job_run(run, JobOutcome.retry(until, error="db busy"))
    backoff = reason(queue.explain(run.id), "backoff")
    assert backoff.evidence["attempt"] == 1 and backoff.evidence["until"] == until
    assert backoff.evidence["error"] == "db busy"


def test_dependencies_are_named_with_their_status(queue):
    name = unique_queue("deps")
    serve(queue, name)
    parent = Job(queue_name=name, payload={"p": 1})
    child = Job(queue_name=name, payload={"c": 1})
    child.depends_on_job(parent)
    queue.enqueue_many([parent, child])
    deps = reason(queue.explain(child.id), "dependencies").evidence
    assert (deps["total"], deps["unfinished"]) == (1, 1)
    assert deps["jobs"][0]["id"] == parent.id and deps["jobs"][0]["status"] == JobStatus.PENDING
    assert queue.explain(parent.id).runnable


def test_a_queue_at_its_limit_or_out_of_rate_gives_the_numbers(queue):
    name = unique_queue("limit")
    serve(queue, name)
    queue.queue_config(name, max_running=1)
    queue.enqueue_many([Job(queue_name=name, payload={"n": n}) for n in range(2)])
    assert len(queue.dequeue(name, DequeueOptions.batch(2))) == 1
    pending = queue.store.find_jobs(_pending(name))[0]
    limit = reason(queue.explain(pending.id), "concurrency").evidence
    assert (limit["running"], limit["max_running"]) == (1, 1)

    rated = unique_queue("rate")
    serve(queue, rated)
    queue.queue_config(rated, rate=(1, 3600))
    queue.enqueue_many([Job(queue_name=rated, payload={"n": n}) for n in range(2)])
    assert len(queue.dequeue(rated, DequeueOptions.batch(2))) == 1
    pending = queue.store.find_jobs(_pending(rated))[0]
    rate = reason(queue.explain(pending.id), "rate").evidence
    assert (rate["rate_limit"], rate["tokens_left"]) == (1, 0)
    assert rate["next_window"] > queue.now()


def test_jobs_ahead_are_counted_with_those_of_a_higher_priority(queue):
    name = unique_queue("ahead")
    serve(queue, name)
    me = Job(queue_name=name, payload={"me": 1}, priority=JobPriority.NORMAL)
    older = [Job(queue_name=name, payload={"o": n}) for n in range(2)]
    for job in older:
        job.scheduled_at = me.scheduled_at - timedelta(seconds=10)
    high = [Job(queue_name=name, payload={"h": n}, priority=JobPriority.HIGH) for n in range(3)]
    low = Job(queue_name=name, payload={"l": 1}, priority=JobPriority.LOW)
    queue.enqueue_many([me, *older, *high, low])
    answer = queue.explain(me.id)
    ahead = reason(answer, "ahead")
    assert (ahead.evidence["ahead"], ahead.evidence["higher_priority"]) == (5, 3)
    assert not ahead.blocking and answer.runnable and answer.codes()[0] == "ready"


def test_a_job_not_waiting_says_so_and_bad_ids_are_typed_errors(queue):
    name = unique_queue("running")
    queue.enqueue(Job(queue_name=name, payload={}))
    run = queue.dequeue_one(name)
    answer = queue.explain(run.id)
    assert answer.codes() == ["not_waiting"] and not answer.runnable
    with pytest.raises(JobNotFound):
        queue.explain(uuid.uuid4())
    with pytest.raises(InvalidJob):
        queue.explain("not-a-uuid")


def _pending(name):
    return Match(queue_name=name, status=JobStatus.PENDING)
