"""Poison from handlers, through a real Worker on the database: an exception whose text no
column holds (NUL, unpaired surrogates, megabytes), an exception that cannot even be made a
string, a result no JSON column holds. Each ends as a recorded failure with its error, and the
jobs batched and written with them complete as usual."""

from __future__ import annotations

from datetime import timedelta

import pytest

from queues.api import Job, JobQueue, JobStatus
from queues.text import MAX_STORED_TEXT, REPLACEMENT
from queues.validation import MAX_JSON_NESTING
from tests.conftest import unique_queue
from tests.workers.support.helpers import running, wait_until
from workers.api import Worker

pytestmark = pytest.mark.django_db(transaction=True)


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no")


def deep(n: int):
    value: object = 0
    for _ in range(n):
        value = [value]
    return value


POISON = {
    "nul": lambda: ValueError("bad\x00thing"),
    "surrogate": lambda: ValueError("bad\ud800thing"),
    "huge": lambda: ValueError("head " + "x" * 3_000_000 + " tail"),
    "unprintable": Unprintable,
}
RESULTS = {
    "surrogate result": {"a": "\ud800"},
    "deep result": deep(MAX_JSON_NESTING + 1),
    "object result": object(),
}


def handler(job):
    """A user's handler: ORM reads and writes through the queue's model, then poison."""
    kind = job.payload["kind"]
    Job.objects.filter(id=job.id).exists()
    if kind in POISON:
        raise POISON[kind]()
    if kind in RESULTS:
        return RESULTS[kind]
    return {"ok": job.payload["i"]}


async def async_handler(job):
    kind = job.payload["kind"]
    if kind in POISON:
        raise POISON[kind]()
    if kind in RESULTS:
        return RESULTS[kind]
    return {"ok": job.payload["i"]}


@pytest.mark.parametrize("run", [handler, async_handler], ids=["sync", "async"])
def test_poison_from_handlers_is_recorded_and_the_rest_complete(run):
    queue = JobQueue()
    name = unique_queue("poison_worker")
    kinds = [*POISON, *RESULTS]
    jobs = [Job(queue_name=name, payload={"kind": k, "i": 0}, max_attempts=1) for k in kinds]
    jobs += [Job(queue_name=name, payload={"kind": "fine", "i": i}) for i in range(20)]
    queue.enqueue_many(jobs)
    worker = (
        Worker(queue, name, run)
        .with_poll_interval(timedelta(milliseconds=20))
        .with_batch_size(8)
        .with_batch_concurrency(3)
    )
    with running(worker):
        wait_until(
            lambda: (
                queue.get_job_counts_by_status(name)["Completed"] == 20
                and queue.get_job_counts_by_status(name)["Dead"] == len(kinds)
            ),
            60,
            f"jobs not all finished: {queue.get_job_counts_by_status(name)}",
        )
    poisoned = jobs[: len(kinds)]
    errors = {job.payload["kind"]: queue.get_job(job.id).error_message for job in poisoned}
    assert errors["nul"] == f"ValueError: bad{REPLACEMENT}thing"
    assert errors["surrogate"] == f"ValueError: bad{REPLACEMENT}thing"
    assert errors["huge"].startswith("ValueError: head xxx") and errors["huge"].endswith("xx tail")
    assert len(errors["huge"]) <= MAX_STORED_TEXT
    assert errors["unprintable"] == "Unprintable: <the exception's message could not be read>"
    assert "unpaired surrogate" in errors["surrogate result"]
    assert f"nested more than {MAX_JSON_NESTING} deep" in errors["deep result"]
    assert "not JSON-serialisable" in errors["object result"]
    for job in jobs[len(kinds) :]:
        stored = queue.get_job(job.id)
        assert stored.status == JobStatus.COMPLETED and stored.attempts == 1
        assert stored.result == {"ok": job.payload["i"]}
