"""Stores: the error history (a row per failed attempt) and the tokens of running runs."""

from __future__ import annotations

import uuid
from datetime import timedelta, timezone

import pytest
from django.db import IntegrityError

from queues.api import JobStatus
from queues.enums import AttemptEnd, HandlerEnd
from queues.models import FailedAttempt
from queues.store import Match
from tests.queues.conftest import unique_queue
from tests.queues.store.conftest import T0, claim, insert, job


def attempt(job_id, n: int, token=None, **fields) -> FailedAttempt:
    fields.setdefault("failed_at", T0 + timedelta(seconds=n))
    fields.setdefault("error", f"failure {n}")
    return FailedAttempt(
        job_id=job_id,
        attempt=n,
        ended_by=fields.pop("ended_by", AttemptEnd.ERROR),
        status=fields.pop("status", JobStatus.PENDING),
        run_token=token,
        **fields,
    )


def test_history_rows_are_kept_per_job_in_the_order_inserted_and_handed_out_as_copies(store):
    name = unique_queue("history")
    a, b = job(name), job(name)
    insert(store, a, b)
    paris = timezone(timedelta(hours=1))
    first = attempt(a.id, 1, exception_class="builtins.ValueError", traceback="Traceback ...")
    first.failed_at = first.failed_at.astimezone(paris)
    store.atomic(lambda: store.insert_attempts([first, attempt(b.id, 1)]))
    store.insert_attempts([attempt(a.id, 2, ended_by=AttemptEnd.TIMEOUT, status=JobStatus.DEAD)])
    first.error = "changed after the insert"

    rows = store.find_attempts(a.id)
    assert [(r.attempt, r.ended_by, r.status, r.error) for r in rows] == [
        (1, AttemptEnd.ERROR, JobStatus.PENDING, "failure 1"),
        (2, AttemptEnd.TIMEOUT, JobStatus.DEAD, "failure 2"),
    ]
    assert rows[0].failed_at == T0 + timedelta(seconds=1)
    assert rows[0].failed_at.utcoffset() == timedelta(0)
    assert (rows[0].exception_class, rows[0].traceback) == ("builtins.ValueError", "Traceback ...")
    assert rows[0].id is not None and rows[0].id < rows[1].id
    rows[0].error = "changed after the read"
    assert store.find_attempts(a.id)[0].error == "failure 1"
    assert [r.error for r in store.find_attempts(b.id)] == ["failure 1"]
    assert store.find_attempts(uuid.uuid4()) == []


def test_a_history_row_of_an_unknown_job_is_an_integrity_error_and_writes_nothing(store):
    name = unique_queue("history_fk")
    known = job(name)
    insert(store, known)
    rows = [attempt(known.id, 1), attempt(uuid.uuid4(), 1)]
    with pytest.raises(IntegrityError):
        store.atomic(lambda: store.insert_attempts(rows))
    assert store.find_attempts(known.id) == []


def test_update_attempt_reaches_the_rows_of_one_run(store):
    name = unique_queue("history_update")
    a = job(name)
    insert(store, a)
    mine, other = uuid.uuid4(), uuid.uuid4()
    store.insert_attempts([attempt(a.id, 1, other), attempt(a.id, 2, mine)])
    fields = {"handler_end": HandlerEnd.STOPPED, "handler_ended_at": T0, "worker": "h:1"}
    assert store.update_attempt(a.id, mine, fields) == 1
    assert store.update_attempt(a.id, uuid.uuid4(), fields) == 0
    first, second = store.find_attempts(a.id)
    assert (first.handler_end, first.worker) == (None, None)
    assert (second.handler_end, second.handler_ended_at, second.worker) == ("stopped", T0, "h:1")


def test_deleting_a_job_deletes_its_history_and_an_undone_transaction_keeps_it(store):
    name = unique_queue("history_delete")
    gone, kept = job(name), job(name)
    insert(store, gone, kept)
    store.insert_attempts([attempt(gone.id, 1), attempt(kept.id, 1)])

    def delete_then_raise():
        store.delete_jobs(Match(ids=[kept.id]))
        store.insert_attempts([attempt(gone.id, 2)])
        raise RuntimeError("undone")

    with pytest.raises(RuntimeError):
        store.atomic(delete_then_raise)
    assert [r.attempt for r in store.find_attempts(kept.id)] == [1]
    assert [r.attempt for r in store.find_attempts(gone.id)] == [1]
    assert store.atomic(lambda: store.delete_jobs(Match(ids=[gone.id]))) == 1
    assert store.find_attempts(gone.id) == []
    assert len(store.find_attempts(kept.id)) == 1


def test_running_tokens_names_the_running_runs_of_the_ids(store):
    name = unique_queue("tokens")
    insert(store, job(name, age=3), job(name, age=2), job(name, age=1))
    token = uuid.uuid4()
    running = [j.id for j in claim(store, name, limit=2, token=token)]
    pending = [j.id for j in store.find_jobs(Match(queue_name=name, status=JobStatus.PENDING))]
    asked = [*running, *pending, uuid.uuid4()]
    assert store.running_tokens(asked) == dict.fromkeys(running, token)
    store.release_runs(running[:1], token)
    assert store.running_tokens(asked) == {running[1]: token}
    assert store.running_tokens([]) == {}
