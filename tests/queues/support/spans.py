"""Spans recorded in this process: an SDK provider with an in-memory exporter swapped in for
the tracer of `queues.tracing` (the global provider stays unset, so no other test records
spans), and the lookups the tracing tests make on what it recorded."""

from __future__ import annotations

from collections.abc import Iterator

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from queues import tracing


class Recorded:
    def __init__(self, provider: TracerProvider, exporter: InMemorySpanExporter) -> None:
        self.provider = provider
        self.exporter = exporter
        #: A tracer of the same provider, for a test's and a handler's own spans.
        self.tracer = provider.get_tracer("tests")

    def all(self) -> list:
        return list(self.exporter.get_finished_spans())

    def named(self, prefix: str) -> list:
        return [span for span in self.all() if span.name.startswith(prefix)]

    def of_job(self, operation: str, job_id) -> list:
        return [
            span
            for span in self.named(f"hammerweb {operation} ")
            if span.attributes[tracing.JOB_ID] == str(job_id)
        ]


def recording(monkeypatch) -> Iterator[Recorded]:
    """For a test module's `spans` fixture: `yield from recording(monkeypatch)`."""
    api = tracing._load()
    assert api is not None, "the tracing tests need opentelemetry-api (the dev group)"
    provider = TracerProvider()
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(api, "tracer", provider.get_tracer("hammerweb"))
    monkeypatch.setattr(api, "has_sdk", lambda: True)
    yield Recorded(provider, exporter)
    provider.shutdown()
