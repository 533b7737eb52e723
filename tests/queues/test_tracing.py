"""Tracing of enqueues (queues/tracing.py): every enqueue path makes a PRODUCER span per job
under the caller's span, and stores that span's W3C context with the job; none without an
SDK or with HAMMERWEB["TRACING"] off. On the database and in memory (TestQueue)."""

from __future__ import annotations

import uuid

import pytest
from asgiref.sync import async_to_sync
from django.db import connection
from django.test.utils import CaptureQueriesContext
from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.trace import SpanKind, StatusCode

from queues import tracing
from queues.api import (
    DequeueOptions,
    InvalidJob,
    Job,
    JobBatch,
    JobGroup,
    JobOutcome,
    JobPriority,
    JobQueue,
)
from tests.conftest import unique_queue
from tests.queues.support.spans import recording
from tests.queues.support.task_functions import calculate_meaning_of_life


@pytest.fixture
def spans(monkeypatch):
    yield from recording(monkeypatch)


def parent_of(traceparent: str) -> tuple[int, int]:
    """The trace id and span id a W3C traceparent names."""
    version, trace_id, span_id, flags = traceparent.split("-")
    assert version == "00" and int(flags, 16) & 1, traceparent  # sampled
    return int(trace_id, 16), int(span_id, 16)


def assert_carries(job: Job, span) -> None:
    """The stored row of `job` carries the context of `span`."""
    assert job.trace_context is not None, "no trace context stored"
    context = span.get_span_context()
    assert parent_of(job.trace_context["traceparent"]) == (context.trace_id, context.span_id)


def test_an_enqueue_is_a_producer_span_under_the_callers_whose_context_the_row_carries(
    queue, spans
):
    name = unique_queue("traced")
    with spans.tracer.start_as_current_span("request") as request:
        job_id = queue.enqueue(Job(queue_name=name, priority=JobPriority.HIGH))

    [span] = spans.of_job("enqueue", job_id)
    assert span.name == f"hammerweb enqueue {name}"
    assert span.kind == SpanKind.PRODUCER
    assert span.parent.span_id == request.get_span_context().span_id
    assert span.context.trace_id == request.get_span_context().trace_id
    assert dict(span.attributes) == {
        "messaging.system": "hammerweb",
        "messaging.operation.type": "send",
        "messaging.operation.name": "enqueue",
        "messaging.destination.name": name,
        "messaging.message.id": str(job_id),
        "hammerweb.job.priority": int(JobPriority.HIGH),
    }
    assert span.status.status_code == StatusCode.UNSET
    assert_carries(queue.get_job(job_id), span)


def test_each_job_of_an_enqueue_many_has_a_span_and_a_context_of_its_own(queue, spans):
    name, other = unique_queue("many"), unique_queue("many_other")
    jobs = [Job(queue_name=name), Job(queue_name=other), Job(queue_name=name)]
    ids = queue.enqueue_many(jobs)

    contexts = set()
    for job_id in ids:
        [span] = spans.of_job("enqueue", job_id)
        assert span.parent is None  # no span was current: each begins a trace
        assert_carries(queue.get_job(job_id), span)
        contexts.add(queue.get_job(job_id).trace_context["traceparent"])
    assert len(contexts) == 3
    assert [s.attributes[tracing.QUEUE] for s in spans.named("hammerweb enqueue")] == [
        name,
        other,
        name,
    ]


def test_unique_enqueues_carry_the_context_of_the_span_of_the_created_job(queue, spans):
    name = unique_queue("uniq")
    first = queue.enqueue_unique(Job(queue_name=name, unique_key="k"))
    again = queue.enqueue_unique(Job(queue_name=name, unique_key="k"))
    assert first.created and not again.created and again.id == first.id
    [span] = spans.of_job("enqueue", first.id)
    assert_carries(queue.get_job(first.id), span)


@pytest.mark.parametrize("kind", ["batch", "workflow"])
def test_every_job_of_a_batch_or_workflow_carries_its_own_span(queue, spans, kind):
    name = unique_queue(kind)
    a, b, c = (Job(queue_name=name, payload={"n": n}) for n in range(3))
    with spans.tracer.start_as_current_span("request") as request:
        if kind == "batch":
            queue.enqueue_batch(JobBatch("b", jobs=[a, b, c]))
        else:
            queue.enqueue_workflow(JobGroup("w").add_parallel_jobs([a, b]).then(c))

    for job in (a, b, c):
        [span] = spans.of_job("enqueue", job.id)
        assert span.parent.span_id == request.get_span_context().span_id
        assert_carries(queue.get_job(job.id), span)


def test_a_refused_enqueue_ends_its_span_in_error_and_writes_nothing(queue, spans):
    name = unique_queue("refused")
    job_id = queue.enqueue(Job(queue_name=name))
    with pytest.raises(InvalidJob):
        queue.enqueue(Job(id=job_id, queue_name=name))

    first, refused = spans.of_job("enqueue", job_id)
    assert first.status.status_code == StatusCode.UNSET
    assert refused.status.status_code == StatusCode.ERROR
    assert [event.name for event in refused.events] == ["exception"]
    assert queue.get_job(job_id).trace_context["traceparent"].split("-")[2] == format(
        first.context.span_id, "016x"
    ), "the refused enqueue changed the stored context"


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("twin", ["enqueue", "aenqueue"])
def test_a_django_task_enqueue_and_its_async_twin_are_traced(spans, twin):
    with spans.tracer.start_as_current_span("view") as view:
        if twin == "enqueue":
            result = calculate_meaning_of_life.enqueue()
        else:
            # async_to_sync: the ORM runs in this thread, whose connection closes below.
            result = async_to_sync(calculate_meaning_of_life.aenqueue)()
    connection.close()

    [span] = spans.of_job("enqueue", result.id)
    assert span.parent.span_id == view.get_span_context().span_id
    assert span.attributes[tracing.QUEUE] == calculate_meaning_of_life.queue_name
    assert_carries(JobQueue().get_job(uuid.UUID(result.id)), span)


def test_without_an_sdk_no_context_is_stored(queue):
    # The API without a provider: its spans are no-ops, and an enqueue stores nothing.
    assert tracing.active() is not None
    assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
    ids = queue.enqueue_many([Job(queue_name=unique_queue("nosdk")) for _ in range(3)])
    assert [queue.get_job(i).trace_context for i in ids] == [None, None, None]


def test_without_an_sdk_a_context_current_at_enqueue_is_passed_on(queue):
    # E.g. a request's traceparent extracted by the project: the jobs carry it on.
    incoming = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    context = propagate.extract({"traceparent": incoming})
    token = otel_context.attach(context)
    try:
        ids = queue.enqueue_many([Job(queue_name=unique_queue("passed")) for _ in range(2)])
    finally:
        otel_context.detach(token)
    assert [queue.get_job(i).trace_context for i in ids] == [{"traceparent": incoming}] * 2


def test_tracing_off_records_no_span_and_stores_no_context(queue, spans, settings):
    settings.HAMMERWEB = {"TRACING": False}
    with spans.tracer.start_as_current_span("request"):
        job_id = queue.enqueue(Job(queue_name=unique_queue("off")))
    assert spans.named("hammerweb") == []
    assert queue.get_job(job_id).trace_context is None


def test_a_span_sampled_out_passes_its_context_on_without_recording(queue, spans):
    # A caller's span that is not sampled: the jobs carry its decision, so that
    # their runs are not sampled either, and nothing is recorded.
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

    unsampled = TracerProvider(sampler=ALWAYS_OFF).get_tracer("tests")
    with unsampled.start_as_current_span("request") as request:
        ids = queue.enqueue_many([Job(queue_name=unique_queue("unsampled")) for _ in range(2)])
    trace_id = format(request.get_span_context().trace_id, "032x")
    for job_id in ids:
        _, stored_trace, _, flags = queue.get_job(job_id).trace_context["traceparent"].split("-")
        assert stored_trace == trace_id and not int(flags, 16) & 1  # not sampled
    assert spans.named("hammerweb") == []


@pytest.mark.django_db(transaction=True)
def test_tracing_adds_no_statement_to_an_enqueue(spans, settings):
    queue = JobQueue()

    def statements() -> int:
        with CaptureQueriesContext(connection) as captured:
            queue.enqueue_many([Job(queue_name=unique_queue("count")) for _ in range(3)])
        return len(captured)

    traced = statements()
    assert len(spans.named("hammerweb enqueue")) == 3
    settings.HAMMERWEB = {"TRACING": False}
    assert statements() == traced
    connection.close()


class BrokenPropagator:
    """A propagator that fails (a project's own, or a bad configuration)."""

    fields = {"traceparent"}

    def inject(self, carrier, context=None, setter=None):
        raise RuntimeError("propagator broken")

    def extract(self, carrier, context=None, getter=None):
        raise RuntimeError("propagator broken")


def test_a_failing_propagator_costs_the_jobs_their_context_not_their_enqueue(
    queue, spans, monkeypatch, caplog
):
    monkeypatch.setattr(tracing._api.propagate, "inject", BrokenPropagator().inject)
    name = unique_queue("broken")
    ids = queue.enqueue_many([Job(queue_name=name) for _ in range(3)])
    assert [queue.get_job(i).trace_context for i in ids] == [None] * 3
    assert "tracing failed" in caplog.text
    # The spans begun before the failure (one a job) are ended: exported, none left open.
    assert len(spans.named(f"hammerweb enqueue {name}")) == 3


def test_a_callback_job_carries_a_context_of_its_own_enqueue(queue, spans):
    name = unique_queue("cb_traced")
    batch = JobBatch(name=name, jobs=[Job(queue_name=name)]).on_success(
        Job(queue_name=f"{name}_cb")
    )
    queue.enqueue_batch(batch)
    [run] = queue.dequeue(name, DequeueOptions.batch(1))
    queue.finish_job_run(run, JobOutcome.completed())
    [callback] = queue.dequeue(f"{name}_cb", DequeueOptions.batch(1))
    [span] = spans.of_job("enqueue", callback.id)
    assert_carries(queue.get_job(callback.id), span)
