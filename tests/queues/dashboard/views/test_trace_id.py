"""The trace id of a job's enqueue on its page, live and archived: shown in a `data-trace-id`,
a link when HAMMERWEB["TRACE_URL"] says how (an http or https one only), nothing for a job
without a context or with one that is malformed (never a 500). And `tracing.trace_id`, which
reads it from the stored W3C context."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse

from queues import tracing
from queues.api import Job, JobOutcome, JobQueue, MockClock
from queues.models import Job as Row
from tests.queues.support.spans import recording

pytestmark = pytest.mark.django_db

JAEGER = "https://jaeger.example/trace/{trace_id}"
TRACE = "0af7651916cd43dd8448eb211c80319c"
PARENT = "b7ad6b7169203331"


@pytest.fixture
def spans(monkeypatch):
    yield from recording(monkeypatch)


def enqueue_traced(engine: JobQueue, qname: str, spans) -> tuple[str, str]:
    """A job enqueued under a span of the caller's: (its id, the trace id of that span)."""
    with spans.tracer.start_as_current_span("checkout") as request:
        job_id = engine.enqueue(Job(queue_name=qname))
    return job_id, format(request.get_span_context().trace_id, "032x")


def page_of(client, job_id) -> str:
    response = client.get(reverse("dashboard:job", args=[job_id]))
    assert response.status_code == 200
    return response.content.decode()


def test_the_job_page_shows_the_trace_id_and_links_it_when_told_how(
    engine, qname, spans, viewer_client, settings
):
    job_id, trace_id = enqueue_traced(engine, qname, spans)
    assert tracing.trace_id(Row.objects.get(id=job_id).trace_context) == trace_id
    html = page_of(viewer_client, job_id)
    assert f'<span class="mono" data-trace-id="{trace_id}">{trace_id}</span>' in html
    assert "jaeger" not in html

    settings.HAMMERWEB = {"TRACE_URL": JAEGER}
    html = page_of(viewer_client, job_id)
    assert (
        f'<a class="mono" href="https://jaeger.example/trace/{trace_id}" rel="noreferrer" '
        f'data-trace-id="{trace_id}">{trace_id}</a>'
    ) in html


def test_the_archived_job_page_shows_it_too(qname, spans, viewer_client, settings):
    engine = JobQueue(clock=MockClock())
    job_id, trace_id = enqueue_traced(engine, qname, spans)
    engine.finish_job_run(engine.dequeue_one(qname), JobOutcome.completed({"sent": 1}))
    engine.clock.advance(timedelta(days=30))
    assert engine.archive_jobs(timedelta(days=7), queue_name=qname) == 1
    settings.HAMMERWEB = {"TRACE_URL": "http://jaeger:16686/trace/{trace_id}"}
    html = page_of(viewer_client, job_id)
    assert 'class="pill big archived">Archived</span>' in html
    assert f'href="http://jaeger:16686/trace/{trace_id}"' in html
    assert f'data-trace-id="{trace_id}"' in html


def test_a_job_without_a_context_shows_no_trace(engine, qname, viewer_client):
    job_id = engine.enqueue(Job(queue_name=qname))  # no SDK, no current span: none stored
    assert Row.objects.get(id=job_id).trace_context is None
    html = page_of(viewer_client, job_id)
    assert "data-trace-id" not in html and "<dt>Trace</dt>" not in html


def test_the_link_is_escaped_and_a_url_the_checks_refuse_is_no_link(
    engine, qname, viewer_client, settings
):
    job_id = engine.enqueue(Job(queue_name=qname))
    Row.objects.filter(id=job_id).update(trace_context={"traceparent": f"00-{TRACE}-{PARENT}-01"})
    settings.HAMMERWEB = {"TRACE_URL": 'https://t.example/{trace_id}?q="><b>x</b>'}
    html = page_of(viewer_client, job_id)
    assert f'href="https://t.example/{TRACE}?q=&quot;&gt;&lt;b&gt;x&lt;/b&gt;"' in html
    assert "<b>x</b>" not in html
    # `manage.py check` refuses these, but a project may run without the checks.
    for url in ("javascript:alert(1)//{trace_id}", "https://t.example/trace", 42):
        settings.HAMMERWEB = {"TRACE_URL": url}
        html = page_of(viewer_client, job_id)
        assert f'<span class="mono" data-trace-id="{TRACE}">{TRACE}</span>' in html
        assert "javascript:" not in html and "t.example" not in html


MALFORMED = [
    "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",  # a string, not a dict
    {"traceparent": None},
    {"traceparent": 7},
    {"traceparent": ""},
    {"traceparent": "junk"},
    {"traceparent": f"00-{TRACE.upper()}-{PARENT}-01"},  # upper case is not W3C's
    {"traceparent": f"ff-{TRACE}-{PARENT}-01"},  # version ff is forbidden
    {"traceparent": f"00-{TRACE}-{PARENT}-01-more"},  # version 00 has four parts
    {"traceparent": f"00-{'0' * 32}-{PARENT}-01"},  # an invalid trace id
    {"traceparent": f"00-{TRACE}-{'0' * 16}-01"},  # an invalid parent id
    {"traceparent": f"00-{TRACE}0-{PARENT}-01"},
    {"traceparent": f"00-{TRACE}-{PARENT}-1"},
    {"traceparent": f"00-<script>alert(1)</script>{TRACE[8:]}-{PARENT}-01"},
    {"traceparent": f"00-{TRACE}-{PARENT}-01\n-x"},
    {"Traceparent": f"00-{TRACE}-{PARENT}-01"},
    {"traceparent": "00-" + "a" * 100_000},
    ["traceparent"],
]


@pytest.mark.parametrize("context", MALFORMED)
def test_a_malformed_context_shows_no_trace_and_is_no_error(
    engine, qname, viewer_client, settings, context
):
    job_id = engine.enqueue(Job(queue_name=qname))
    Row.objects.filter(id=job_id).update(trace_context=context)
    settings.HAMMERWEB = {"TRACE_URL": JAEGER}
    assert tracing.trace_id(context) is None
    html = page_of(viewer_client, job_id)
    assert "data-trace-id" not in html and "<script>alert" not in html


@pytest.mark.parametrize(
    "traceparent",
    [
        f"00-{TRACE}-{PARENT}-01",
        f"00-{TRACE}-{PARENT}-00",  # not sampled: still its trace
        f" 00-{TRACE}-{PARENT}-01 ",
        f"01-{TRACE}-{PARENT}-01-what-a-later-version-adds",
    ],
)
def test_trace_id_reads_a_w3c_traceparent(traceparent):
    carrier = {"traceparent": traceparent, "tracestate": "vendor=x"}
    assert tracing.trace_id(carrier) == TRACE
    assert tracing.trace_id(None) is None
