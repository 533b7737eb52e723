"""Tracing of runs (queues/tracing.py, workers/runtime/slots.py): a worker's run of a job is a
CONSUMER span linked to the span that enqueued it, current while the handler runs (its own
spans nest under it), with the run's outcome and the handler's error. In-process workers, on
the database and in memory (TestQueue)."""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import timedelta

import pytest
from django.db import connection
from opentelemetry.trace import SpanKind, StatusCode

from queues import tracing
from queues.api import Job, JobPriority, JobQueue, JobStatus, RetryStrategy, TestQueue
from tests.conftest import unique_queue
from tests.queues.support.spans import recording
from tests.workers.support.helpers import running, wait_for_status, wait_until
from workers.api import Worker

pytestmark = pytest.mark.django_db(transaction=True)
FAST = timedelta(milliseconds=20)


@pytest.fixture
def spans(monkeypatch):
    yield from recording(monkeypatch)


@pytest.fixture(params=["db", "memory"])
def queue(request):
    if request.param == "db":
        yield JobQueue()
        connection.close()
    else:
        yield TestQueue()


def run_until(queue, name, status, count, handler, **settings) -> None:
    with running(Worker(queue, name, handler, poll_interval=FAST, **settings)):
        wait_for_status(queue, name, status, count, 30)


def process_span(spans, job_id):
    wait_until(lambda: spans.of_job("process", job_id), 30, "no process span")
    [span] = spans.of_job("process", job_id)
    return span


def test_a_run_is_a_consumer_span_linked_to_its_enqueue_and_its_handlers_spans_nest(queue, spans):
    name = unique_queue("run")
    with spans.tracer.start_as_current_span("request"):
        job_id = queue.enqueue(Job(queue_name=name, payload={"n": 2}))
    [enqueued] = spans.of_job("enqueue", job_id)

    def handler(job):
        with spans.tracer.start_as_current_span("handler work"):
            return job.payload["n"] * 2

    run_until(queue, name, "Completed", 1, handler)

    span = process_span(spans, job_id)
    assert span.name == f"hammerweb process {name}"
    assert span.kind == SpanKind.CONSUMER
    [link] = span.links
    assert (link.context.trace_id, link.context.span_id) == (
        enqueued.context.trace_id,
        enqueued.context.span_id,
    )
    assert span.parent is None, "a run begins a trace of its own (linked, not a child)"
    assert dict(span.attributes) == {
        "messaging.system": "hammerweb",
        "messaging.operation.type": "process",
        "messaging.operation.name": "process",
        "messaging.destination.name": name,
        "messaging.message.id": str(job_id),
        "hammerweb.job.priority": int(JobPriority.NORMAL),
        "hammerweb.job.attempt": 1,
        "hammerweb.job.outcome": "completed",
    }
    assert span.status.status_code == StatusCode.UNSET
    [work] = spans.named("handler work")
    assert work.parent.span_id == span.context.span_id
    assert work.context.trace_id == span.context.trace_id


def test_a_failed_run_is_an_error_with_the_exception_and_a_retried_one_says_so(queue, spans):
    name = unique_queue("fail")
    later = RetryStrategy.fixed(timedelta(hours=1))
    last = queue.enqueue(Job(queue_name=name, payload={"n": 0}, max_attempts=1))
    retried = queue.enqueue(
        Job(queue_name=name, payload={"n": 1}, max_attempts=3, retry_strategy=later)
    )

    def handler(job):
        raise ValueError(f"boom {job.payload['n']}")

    with running(Worker(queue, name, handler, poll_interval=FAST)):
        wait_for_status(queue, name, JobStatus.DEAD, 1, 30)
        wait_until(lambda: queue.get_job(retried).attempts == 1, 30, "no retry")

    for job_id, outcome, message in [(last, "failed", "boom 0"), (retried, "retried", "boom 1")]:
        span = process_span(spans, job_id)
        assert span.attributes[tracing.OUTCOME] == outcome
        assert span.attributes["error.type"] == "builtins.ValueError"
        assert span.status.status_code == StatusCode.ERROR
        assert span.status.description == f"ValueError: {message}"
        [event] = span.events
        assert event.name == "exception"
        assert event.attributes["exception.type"] == "ValueError"
        assert event.attributes["exception.message"] == message


def test_a_run_past_its_timeout_is_timed_out(queue, spans):
    name = unique_queue("slow")
    later = RetryStrategy.fixed(timedelta(hours=1))  # one run only
    job_id = queue.enqueue(
        Job(queue_name=name, timeout=timedelta(milliseconds=50), retry_strategy=later)
    )

    def handler(job):
        with spans.tracer.start_as_current_span("handler work"):
            time.sleep(0.5)

    with running(Worker(queue, name, handler, poll_interval=FAST)):
        span = process_span(spans, job_id)
    assert span.attributes[tracing.OUTCOME] == "retried"  # its attempts left: run again
    assert span.attributes["error.type"] == "retried"
    assert span.status.status_code == StatusCode.ERROR
    assert span.status.description == "Job timed out after 0.05s"
    # The handler ran in a thread of its own (it has a timeout): its span still nests.
    wait_until(lambda: spans.named("handler work"), 30, "the handler's span did not end")
    assert spans.named("handler work")[0].parent.span_id == span.context.span_id


def test_an_async_handlers_spans_nest_under_its_run(queue, spans):
    name = unique_queue("async")
    job_id = queue.enqueue(Job(queue_name=name, max_attempts=1))

    async def handler(job):
        with spans.tracer.start_as_current_span("async work"):
            await asyncio.sleep(0)
        return "ok"

    run_until(queue, name, "Completed", 1, handler)
    span = process_span(spans, job_id)
    [work] = spans.named("async work")
    assert work.parent.span_id == span.context.span_id


def test_a_job_enqueued_untraced_runs_in_a_span_without_a_link(queue, spans, settings):
    name = unique_queue("untraced")
    settings.HAMMERWEB = {"TRACING": False}
    job_id = queue.enqueue(Job(queue_name=name))
    settings.HAMMERWEB = {}
    run_until(queue, name, "Completed", 1, lambda job: None)
    span = process_span(spans, job_id)
    assert span.links == () or list(span.links) == []
    assert span.attributes[tracing.OUTCOME] == "completed"


def test_a_run_cancelled_while_it_runs_says_so(queue, spans):
    name = unique_queue("cancel")
    job_id = queue.enqueue(Job(queue_name=name))
    started = threading.Event()

    def handler(job):
        started.set()
        while not job.cancel_requested():
            time.sleep(0.01)
        return "stopped"

    worker = Worker(
        queue, name, handler, poll_interval=FAST, cancel_check_interval=timedelta(milliseconds=50)
    )
    with running(worker):
        assert started.wait(30), "the handler did not start"
        queue.cancel_job(job_id, reason="not needed")
        span = process_span(spans, job_id)
    assert span.attributes[tracing.OUTCOME] == "cancelled"
    assert span.status.status_code == StatusCode.UNSET
