"""OpenTelemetry tracing, when opentelemetry-api is installed (the `otel` extra) and
`HAMMERWEB["TRACING"]` is on: each enqueued job is a PRODUCER span whose W3C context rides
the job's insert (`Job.trace_context`), each run a CONSUMER span linked to it. The API is
imported at first use, never when absent or off; with no SDK no span is made (a context
current at enqueue is still stored). `trace_id` reads a stored context's trace id, for the
job's page and `jobs show`. See docs/howto/tracing.md."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import SimpleNamespace

from django.core.signals import setting_changed

from queues import conf

logger = logging.getLogger(__name__)

SYSTEM = "hammerweb"
#: The attributes' names: OpenTelemetry's messaging conventions where one fits.
QUEUE = "messaging.destination.name"
JOB_ID = "messaging.message.id"
OPERATION = "messaging.operation.type"
PRIORITY = "hammerweb.job.priority"
ATTEMPT = "hammerweb.job.attempt"
OUTCOME = "hammerweb.job.outcome"

#: W3C Trace Context's traceparent: version, trace id, parent id, flags (more after, from
#: versions to come), as OpenTelemetry's propagator reads it.
_TRACEPARENT = re.compile(r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}(-.*)?")

_api: SimpleNamespace | bool | None = None  # None: not looked for yet; False: absent
_on: bool | None = None  # whether tracing is on; None: to be read again from the settings


def trace_id(carrier: object) -> str | None:
    """The trace id (32 hex digits) of a stored context (`Job.trace_context`), read without
    OpenTelemetry; None without one, or for one malformed (the column is anyone's JSON)."""
    value = carrier.get("traceparent") if isinstance(carrier, dict) else None
    found = _TRACEPARENT.fullmatch(value.strip()) if isinstance(value, str) else None
    if found is None:
        return None
    version, trace, parent, rest = found.groups()
    invalid = version == "ff" or (version == "00" and rest) or set(trace) == {"0"}
    return None if invalid or set(parent) == {"0"} else trace


def _load() -> SimpleNamespace | None:
    global _api
    if _api is None:
        try:
            from opentelemetry import propagate, trace
        except ImportError:
            _api = False
        else:
            _api = SimpleNamespace(
                trace=trace,
                propagate=propagate,
                # A proxy until a provider is set, then the provider's tracer: kept for ever.
                tracer=trace.get_tracer("hammerweb"),
                has_sdk=_Provider(trace),
            )
    return _api or None


class _Provider:
    """Whether a tracer provider (an SDK's) is set: else every span is a no-op. Looked up at
    most once a second while none is (the lookup reads the environment, a few µs: more than
    the rest of an untraced run's tracing); once one is, it stays (it can be set once)."""

    def __init__(self, trace) -> None:
        self.trace = trace
        self.found = False
        self.next_look = 0.0

    def __call__(self) -> bool:
        if self.found:
            return True
        now = time.monotonic()
        if now >= self.next_look:
            provider = self.trace.get_tracer_provider()
            self.found = not isinstance(provider, self.trace.ProxyTracerProvider)
            self.next_look = now + 1.0
        return self.found


def active() -> SimpleNamespace | None:
    """The API's handles while tracing is on and the API importable, else None. Read once:
    a settings lookup per job would cost more than the no-op spans."""
    global _on
    if _on is None:
        _on = bool(conf.get("TRACING")) and _load() is not None
    return _api if _on else None


def _setting_changed(setting, **kwargs) -> None:
    global _on
    if setting == conf.SETTING:
        _on = None


setting_changed.connect(_setting_changed)


def _attributes(job, operation: str) -> dict:
    return {
        "messaging.system": SYSTEM,
        OPERATION: operation,
        "messaging.operation.name": "enqueue" if operation == "send" else "process",
        QUEUE: job.queue_name,
        JOB_ID: str(job.id),
        PRIORITY: int(job.priority),
    }


def _carrier(api, span) -> dict | None:
    carrier: dict = {}
    api.propagate.inject(carrier, context=api.trace.set_span_in_context(span))
    return carrier or None


def _enqueue_span(api, job):
    return api.tracer.start_span(
        f"hammerweb enqueue {job.queue_name}",
        kind=api.trace.SpanKind.PRODUCER,
        attributes=_attributes(job, "send"),
    )


@contextmanager
def enqueue_spans(jobs: Sequence) -> Iterator[None]:
    """Around the insert of new jobs: a span per job, whose context each job carries (set
    before the insert, so it rides it). A span not recorded (no SDK, or sampled out) says
    the same of them all: the jobs share its context (none without a valid one) and no
    other span is made, so that an enqueue without an SDK pays one no-op span."""
    api = active() if jobs else None
    spans = _started(api, jobs) if api is not None else []
    try:
        yield
    except BaseException as exc:
        for span in spans:
            _fail(api, span, exc)
        raise
    finally:
        for span in spans:
            span.end()


def _started(api, jobs: Sequence) -> list:
    """The recording spans of `jobs`' enqueue, each job given its context. A tracer or
    propagator that fails costs the jobs their context, never their enqueue."""
    spans: list = []
    try:
        current = api.trace.get_current_span()
        if not (api.has_sdk() or current.get_span_context().is_valid):
            return []
        first = _enqueue_span(api, jobs[0])
        if not first.is_recording():
            carrier = _carrier(api, first) if first.get_span_context().is_valid else None
            for job in jobs:
                job.trace_context = None if carrier is None else dict(carrier)
            return []
        spans.append(first)
        for job in jobs[1:]:
            spans.append(_enqueue_span(api, job))
        for job, span in zip(jobs, spans, strict=True):
            job.trace_context = _carrier(api, span)
        return spans
    except Exception:
        logger.warning(
            "tracing failed: these jobs are enqueued without a trace context", exc_info=True
        )
        for job in jobs:
            job.trace_context = None
        for span in spans:
            span.end()
        return []


def _fail(api, span, exc: BaseException | None, description: str | None = None) -> None:
    if exc is not None:
        span.record_exception(exc)
        span.set_attribute("error.type", f"{type(exc).__module__}.{type(exc).__qualname__}")
        description = description or f"{type(exc).__name__}: {exc}"
    span.set_status(api.trace.Status(api.trace.StatusCode.ERROR, description))


class RunSpan:
    """The span of one run, current while the handler runs; `end` says how it went."""

    def __init__(self, api, span) -> None:
        self.api = api
        self.span = span
        self.ended = False

    def end(self, outcome: str, error: BaseException | None, message: str | None) -> None:
        span, self.ended = self.span, True
        if span.is_recording():
            span.set_attribute(OUTCOME, outcome)
            if error is not None or outcome not in ("completed", "cancelled"):
                _fail(self.api, span, error, message)
                if error is None:
                    span.set_attribute("error.type", outcome)
        span.end()


def _link(api, job) -> list:
    """The link to the span that enqueued `job` (none if it carries no valid context)."""
    if not job.trace_context:
        return []
    try:
        context = api.propagate.extract(job.trace_context)
    except Exception:  # a context that cannot be read links nothing: the run goes on
        return []
    linked = api.trace.get_current_span(context).get_span_context()
    return [api.trace.Link(linked)] if linked.is_valid else []


def runs_traced() -> bool:
    """Whether a run would be a span (`run_span`): cheap, for the worker's hot path."""
    api = active()
    return api is not None and api.has_sdk()


@contextmanager
def run_span(job) -> Iterator[RunSpan | None]:
    """A CONSUMER span for the run of `job`, current within (so that the handler's own
    spans nest under it), linked to the span that enqueued the job. Its parent is the
    ambient context, as the messaging conventions have it (a worker's thread has none: a
    run begins a trace of its own, as retries and recurring runs come long after the
    enqueue). None when tracing is off or the span a no-op; else the caller `end`s it."""
    api = active()
    if api is None or not api.has_sdk():  # without an SDK, every span is a no-op
        yield None
        return
    attributes = _attributes(job, "process")
    attributes[ATTEMPT] = job.attempts
    span = api.tracer.start_span(
        f"hammerweb process {job.queue_name}",
        kind=api.trace.SpanKind.CONSUMER,
        links=_link(api, job),
        attributes=attributes,
    )
    if not span.get_span_context().is_valid:  # the API without an SDK: nothing to record
        yield None
        return
    run = RunSpan(api, span)
    # The handler's errors are the run's outcome: `end` records them, not `use_span`.
    with api.trace.use_span(
        span, end_on_exit=False, record_exception=False, set_status_on_exception=False
    ):
        try:
            yield run
        except BaseException as exc:  # a bug of the worker's, not the handler's
            if not run.ended:
                run.end("failed", exc, None)
            raise
        finally:
            if not run.ended:
                run.end("failed", None, "the run ended without an outcome")
