"""Tracing through `runworker` child processes: jobs enqueued under a span here run in a
child that exports its spans to a file (tests/workers/support/otel_jobs.py), each run's span
linked to the enqueue span's context stored with the job; and a child that cannot import
OpenTelemetry runs and enqueues jobs without loading it or storing any context."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta

import pytest

from queues.api import Job, JobQueue, JobStatus, RetryStrategy
from tests.queues.support.spans import recording
from tests.workers.runworker.test_runworker import RunWorker
from tests.workers.support.otel_jobs import (
    BARE_QUEUE,
    SPANS_FILE,
    TRACED_QUEUE,
    read_spans,
    traced_sum,
)

pytestmark = pytest.mark.django_db(transaction=True)
INCLUDE = ["--include", "tests.workers.support.otel_jobs"]

#: A sitecustomize for the child: any import of opentelemetry fails, as if not installed.
BLOCKER = """
import sys


class _NoOpenTelemetry:
    def find_spec(self, name, path=None, target=None):
        if name == "opentelemetry" or name.startswith("opentelemetry."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _NoOpenTelemetry())
"""


@pytest.fixture
def spans(monkeypatch):
    yield from recording(monkeypatch)


@pytest.fixture
def start(tmp_path):
    started: list[RunWorker] = []

    def start(*args: str, env: dict) -> RunWorker:
        run = RunWorker(tmp_path, *args, *INCLUDE, env=env)
        started.append(run)
        return run

    yield start
    for run in started:
        run.stop()


def by_job(spans: list[dict], operation: str) -> dict[str, dict]:
    found = {}
    for span in spans:
        if span["name"].startswith(f"hammerweb {operation} "):
            assert span["attributes"]["messaging.message.id"] not in found, "two spans"
            found[span["attributes"]["messaging.message.id"]] = span
    return found


def test_runs_in_a_worker_process_link_to_the_enqueue_spans(spans, start, tmp_path):
    exported = tmp_path / "spans.jsonl"
    queue = JobQueue()
    later = RetryStrategy.fixed(timedelta(hours=1))
    with spans.tracer.start_as_current_span("request"):
        done = queue.enqueue(Job(queue_name=TRACED_QUEUE, payload={"n": 1}, priority=3))
        dead = queue.enqueue(Job(queue_name=TRACED_QUEUE, payload={"fail": "no"}, max_attempts=1))
        retried = queue.enqueue(
            Job(queue_name=TRACED_QUEUE, payload={"fail": "again"}, retry_strategy=later)
        )
        task = traced_sum.enqueue(2, 3)
    enqueued = {str(job_id): spans.of_job("enqueue", job_id)[0] for job_id in (done, dead, retried)}
    enqueued[task.id] = spans.of_job("enqueue", task.id)[0]

    run = start(TRACED_QUEUE, "--burst", env={SPANS_FILE: str(exported)})
    assert run.wait() == 0, run.text()
    assert queue.get_job(done).status == JobStatus.COMPLETED
    assert queue.get_job(dead).status == JobStatus.DEAD
    assert queue.get_job(retried).status == JobStatus.PENDING
    assert traced_sum.get_result(task.id).return_value == 5

    exported_spans = read_spans(exported)
    runs = by_job(exported_spans, "process")
    assert runs.keys() == enqueued.keys()
    for job_id, run_span in runs.items():
        context = enqueued[job_id].context
        assert run_span["links"] == [[context.trace_id, context.span_id]]
        assert run_span["kind"] == "CONSUMER"
        assert run_span["attributes"]["messaging.system"] == "hammerweb"
        assert run_span["attributes"]["messaging.operation.type"] == "process"
        assert run_span["attributes"]["messaging.destination.name"] == TRACED_QUEUE
        assert run_span["attributes"]["hammerweb.job.attempt"] == 1
    assert runs[str(done)]["attributes"]["hammerweb.job.priority"] == 3

    outcomes = {
        job_id: span["attributes"]["hammerweb.job.outcome"] for job_id, span in runs.items()
    }
    assert outcomes == {
        str(done): "completed",
        str(dead): "failed",
        str(retried): "retried",
        task.id: "completed",
    }
    assert runs[str(done)]["status"] == "UNSET"
    for job_id, message in [(dead, "no"), (retried, "again")]:
        failed = runs[str(job_id)]
        assert (failed["status"], failed["description"]) == ("ERROR", f"ValueError: {message}")
        [event] = failed["events"]
        assert event["name"] == "exception"
        assert event["attributes"]["exception.type"] == "ValueError"
        assert event["attributes"]["exception.message"] == message

    # The handlers' own spans (a job handler's, a task's) nest under their runs.
    work = [span for span in exported_spans if span["name"] in ("handler work", "task work")]
    assert sorted(span["parent"] for span in work) == sorted(
        span["span_id"] for span in runs.values()
    )


def test_a_worker_without_opentelemetry_loads_none_of_it_and_stores_no_context(start, tmp_path):
    (tmp_path / "sitecustomize.py").write_text(BLOCKER)
    path = os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))
    first = JobQueue().enqueue(Job(queue_name=BARE_QUEUE, payload={"then": True}))

    run = start(BARE_QUEUE, "--burst", env={"PYTHONPATH": path})
    assert run.wait() == 0, run.text()

    rows = list(Job.objects.filter(queue_name=BARE_QUEUE))
    assert len(rows) == 2, rows  # the one enqueued here, and the one its handler enqueued
    assert first in {job.id for job in rows}
    for job in rows:
        assert job.status == JobStatus.COMPLETED, job.error_message
        assert job.result == {"loaded": []}, "the worker loaded OpenTelemetry"
        assert job.trace_context is None


def test_the_blocker_does_block(tmp_path):
    # The check above is only worth something if the child really cannot import it.
    (tmp_path / "sitecustomize.py").write_text(BLOCKER)
    code = "import opentelemetry"
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 1 and "No module named 'opentelemetry'" in done.stderr
