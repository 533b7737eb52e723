"""Error groups (`queues.reads.error_groups`): the failed attempts of a window grouped by class
and normalized message, with counts, first and last seen, queues, buckets, a sample and the
jobs to retry; older attempts left out; a bounded read that says so; new and growing groups;
and "retry all in this group" as a bulk operation, on the database and in memory alike."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from queues.api import DequeueOptions, Job, JobOutcome, JobQueue, JobStatus, MockClock
from queues.ops import bulk
from queues.reads import error_groups
from queues.reads.error_groups import WINDOWS, normalize
from queues.reads.search import SearchFilter
from tests.queues.conftest import unique_queue
from tests.queues.ops.test_bulk_runner import run_to_end


def fail(queue, name: str, errors: list[tuple[str, str]]) -> list:
    """One job of `name` a (class, message), run once and failed for good."""
    ids = queue.enqueue_many([Job(queue_name=name, payload={"n": i}, max_attempts=1)
                              for i in range(len(errors))])  # fmt: skip
    runs = {run.id: run for run in queue.dequeue(name, DequeueOptions(batch_size=len(ids)))}
    outcomes = [
        (runs[job_id], JobOutcome.failed(message, traceback=f"Traceback\n  {cls}: {message}",
                                         exception_class=cls))
        for job_id, (cls, message) in zip(ids, errors, strict=True)
    ]  # fmt: skip
    queue.finish_job_runs(outcomes)
    return ids


@pytest.mark.parametrize(
    ("message", "normalized"),
    [
        ("order 123 not found", "order <n> not found"),
        ("User 'bob' has no account", "User <value> has no account"),
        ('key "a-b" missing', "key <value> missing"),
        ("job 0b6c1c58-1f2e-4c3d-9a8b-7c6d5e4f3a2b is locked", "job <id> is locked"),
        ("connect to 10.0.0.12:5432 failed", "connect to <ip> failed"),
        ("object at 0x7f3a2b1c0d90 gone", "object at <addr> gone"),
        ("mail to ann@example.com bounced", "mail to <email> bounced"),
        ("GET https://api.example.com/v1/orders/9?x=1 gave 503", "GET <url> gave <n>"),
        ("line one\nline 2 details", "line one"),
        ("utf8 ok: café  spaced", "utf8 ok: café spaced"),
        (None, ""),
    ],
)
def test_a_message_is_normalized(message, normalized):
    assert normalize(message) == normalized


@pytest.mark.django_db(transaction=True)
def test_attempts_are_grouped_with_their_evidence():
    queue = JobQueue(clock=MockClock())
    a, b = unique_queue("errs"), unique_queue("errs")
    old = JobQueue(clock=MockClock(timezone.now() - timedelta(days=2)))
    fail(old, a, [("app.NotFound", "order 1 not found")])  # outside the 24 hours
    ids = fail(
        queue, a, [("app.NotFound", "order 7 not found"), ("app.NotFound", "order 8 not found")]
    )
    ids += fail(
        queue, b, [("app.NotFound", "order 9 not found"), ("app.Refused", "order 9 not found")]
    )
    found = error_groups.groups(WINDOWS["24h"], timezone.now() + timedelta(seconds=1))
    mine = {g.exception_class: g for g in found.groups if set(g.queues) & {a, b}}
    notfound, refused = mine["app.NotFound"], mine["app.Refused"]
    assert (notfound.count, notfound.message, dict(notfound.queues)) == (
        3,
        "order <n> not found",
        {a: 2, b: 1},
    )
    assert set(notfound.job_ids) == set(ids[:3]) and list(refused.job_ids) == [ids[3]]
    assert notfound.first_seen <= notfound.last_seen and sum(notfound.buckets) == 3
    assert (
        refused.sample_traceback.startswith("Traceback")
        and refused.sample_error == "order 9 not found"
    )
    assert notfound.new, "nothing of it in the first half of the window"
    assert error_groups.find(WINDOWS["24h"], timezone.now(), refused.key).count == 1
    assert error_groups.find(WINDOWS["24h"], timezone.now(), "0" * 16) is None


@pytest.mark.django_db(transaction=True)
def test_the_read_is_bounded_and_says_how_far_it_looked(monkeypatch):
    queue = JobQueue(clock=MockClock())
    fail(queue, unique_queue("errs"), [("app.E", f"n {i}") for i in range(5)])
    monkeypatch.setattr(error_groups, "ROW_CAP", 3)
    found = error_groups.groups(WINDOWS["1h"], timezone.now() + timedelta(seconds=1))
    assert (found.read, found.capped) == (3, True) and found.read_from is not None


def test_growing_is_a_second_half_with_twice_the_first():
    window, start = WINDOWS["1h"], timezone.now() - timedelta(hours=1)
    early, late = start + timedelta(minutes=5), start + timedelta(minutes=50)
    rows = [(i, "E", "x", late, i, "q") for i in range(10)] + [(99, "E", "x", early, 99, "q")]
    rows += [(200 + i, "F", "y", when, i, "q") for i, when in enumerate([early] * 5 + [late] * 5)]
    found = error_groups._group(rows, window, start, start + window.span)
    by_class = {g.exception_class: g for g in found.values()}
    assert by_class["E"].growing and not by_class["E"].new
    assert not by_class["F"].growing and not by_class["F"].new


def test_a_groups_jobs_are_retried_by_a_bulk_operation(queue):
    """The retry of a group: a `SearchFilter` of its job ids, as the store reads it."""
    name = unique_queue("errs")
    ids = fail(queue, name, [("app.E", "boom 1"), ("app.E", "boom 2")])
    other = fail(queue, name, [("app.F", "other")])
    flt = SearchFilter(job_ids=[str(i) for i in ids], chosen="the failed jobs of app.E")
    op = bulk.start(flt, "retry", "ops", store=queue.store)
    assert op.total == 2 and "app.E" in op.description
    done = run_to_end(bulk.BulkRunner(queue, batch_size=1))
    assert done.done == 2
    assert {queue.get_job(i).status for i in ids} == {JobStatus.PENDING}
    assert queue.get_job(other[0]).status == JobStatus.DEAD, "out of attempts, not retried"
