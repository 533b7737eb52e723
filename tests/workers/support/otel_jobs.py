"""Handlers and a task for the tracing tests' `runworker` processes (`--include
tests.workers.support.otel_jobs`). With `HAMMERWEB_TEST_SPANS` set to a path, the process
configures the OpenTelemetry SDK when it imports this module and exports each span as it
ends to that file, one JSON object a line (`read_spans`). Without it, nothing here imports
OpenTelemetry: the `BARE_QUEUE` handler reports which of its modules the process loaded."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from django.tasks import task

from queues.api import Job, JobQueue
from workers.api import job_handler

TRACED_QUEUE = "otel_work"
BARE_QUEUE = "otel_bare"
SPANS_FILE = "HAMMERWEB_TEST_SPANS"


@job_handler(TRACED_QUEUE)
def traced(job):
    from opentelemetry import trace

    with trace.get_tracer("tests").start_as_current_span("handler work"):
        if "fail" in job.payload:
            raise ValueError(job.payload["fail"])
        return {"n": job.payload.get("n")}


@task(queue_name=TRACED_QUEUE)
def traced_sum(a, b):
    from opentelemetry import trace

    with trace.get_tracer("tests").start_as_current_span("task work"):
        return a + b


@job_handler(BARE_QUEUE)
def bare(job):
    """Enqueues a job of its own once (`then` in the payload), then says which OpenTelemetry
    modules this process has loaded."""
    if job.payload.get("then"):
        JobQueue().enqueue(Job(queue_name=BARE_QUEUE, payload={"then": False}))
    return {"loaded": sorted(name for name in sys.modules if name.startswith("opentelemetry"))}


def _as_dict(span) -> dict:
    return {
        "name": span.name,
        "kind": span.kind.name,
        "trace_id": span.context.trace_id,
        "span_id": span.context.span_id,
        "parent": span.parent.span_id if span.parent else None,
        "links": [[link.context.trace_id, link.context.span_id] for link in span.links],
        "attributes": dict(span.attributes),
        "status": span.status.status_code.name,
        "description": span.status.description,
        "events": [{"name": e.name, "attributes": dict(e.attributes)} for e in span.events],
    }


def read_spans(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _configure(path: str) -> None:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import (
        SimpleSpanProcessor,
        SpanExporter,
        SpanExportResult,
    )

    class JsonLines(SpanExporter):
        def export(self, spans):
            with open(path, "a") as out:
                for span in spans:
                    out.write(json.dumps(_as_dict(span)) + "\n")
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(JsonLines()))
    trace.set_tracer_provider(provider)


if os.environ.get(SPANS_FILE):
    _configure(os.environ[SPANS_FILE])
