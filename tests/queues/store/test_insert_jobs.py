"""The SQL store's insert of new jobs (`insert_jobs`: one JSON parameter a statement, each
vendor's catalogue statement; on PostgreSQL from `STREAM_FROM` jobs up a COPY of the same
values) writes every column exactly as Django's own insert writes it, and leaves the jobs
saved, as bulk_create did."""

from __future__ import annotations

import json
import re
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django.db import IntegrityError, connection
from django.utils import timezone

from queues.api import JobQueue
from queues.enums import JobStatus
from queues.models import Batch, Job, Workflow
from queues.store import sql_store
from queues.store.catalogue import VENDORS, queries_for
from queues.store.sql import postgresql
from queues.validation import PAYLOAD_TEXT, validate_job

pytestmark = pytest.mark.django_db

COLUMNS = [field.column for field in Job._meta.concrete_fields]
#: How each vendor's statement reads the row's value at a position.
POSITION = {
    "postgresql": r"r->>(\d+)",
    "sqlite": r"json_extract\(value, '\$\[(\d+)\]'\)",
    "mysql": r"PATH '\$\[(\d+)\]'",
}


@pytest.mark.parametrize("vendor", VENDORS)
def test_the_statement_writes_every_column_of_the_model_in_its_order(vendor):
    sql = queries_for(vendor)["insert_jobs"]
    named = re.search(r"INSERT INTO queues_job \((.*?)\)", sql, re.DOTALL).group(1)
    assert [column.strip() for column in named.split(",")] == COLUMNS
    positions = [int(n) for n in re.findall(POSITION[vendor], sql)]
    assert positions == list(range(len(COLUMNS)))


@pytest.fixture(params=["insert", "stream"])
def path(request, monkeypatch):
    """Both ways a job's row is written: `insert_jobs`, and on PostgreSQL the COPY, here
    from one job up."""
    if request.param == "stream":
        if connection.vendor != "postgresql":
            pytest.skip("PostgreSQL's COPY")
        monkeypatch.setattr(postgresql, "STREAM_FROM", 1)
    return request.param


def _every_column_set(parent: Job, batch: Batch, workflow: Workflow, slot: str) -> Job:
    """A job with a value that is not the default in every column, of every kind."""
    at = datetime(2030, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    return Job(
        queue_name="insert_ïñ_queue",
        payload={
            "text": 'a "quoted"\nline ✓ 𝄞',
            "n": 2**53 + 1,
            "f": 1.5,
            "ok": False,
            "none": None,
            "nested": [{"x": []}],
        },  # fmt: skip
        status=JobStatus.RUNNING,
        priority=4,
        attempts=2,
        max_attempts=7,
        created_at=at,
        scheduled_at=at.replace(microsecond=0),  # a whole second: no fraction in its text
        started_at=at + timedelta(seconds=1),
        completed_at=at + timedelta(seconds=2),
        failed_at=at + timedelta(seconds=3),
        timed_out_at=at + timedelta(seconds=4),
        error_message="it's\tbroken: 'x' \\ %s %(y)s 🚨",
        timeout=timedelta(days=2, seconds=90, microseconds=5),  # days: an interval's own unit
        retry_strategy={"kind": "exponential", "base": 2},
        result=["a", 1, None, True],
        cron_schedule="*/5 * * * *",
        timezone="Europe/Paris",
        next_run_at=at + timedelta(minutes=5),
        recurring=True,
        batch=batch,
        workflow=workflow,
        depends_on=[str(parent.id)],
        dependency_status="satisfied",
        run_token=uuid.uuid4(),
        lease_expires_at=at + timedelta(minutes=1),
        last_heartbeat_at=at + timedelta(seconds=30),
        claimed_by=uuid.uuid4(),
        unique_key="key ✓",
        unique_scope={"statuses": ["Pending"], "period": 60},
        unique_slot=slot,
        schedule_name="nightly",
        schedule_removed_at=at + timedelta(days=1),
        tags=["urgent", "ü"],
        meta={"by": "test", "n": 1},
    )


#: Each column as the database's own text of it: an interval of 48 hours and one of 2 days
#: read back as the same timedelta, but are not stored alike; SQLite's quote() tells the
#: integer 1 from the text '1'.
AS_TEXT = {"postgresql": "{}::text", "mysql": "CAST({} AS CHAR)", "sqlite": "quote({})"}


def _raw_row(job_id: uuid.UUID) -> dict:
    """The row as the database holds it, each column as its text."""
    adapted = Job._meta.pk.get_db_prep_value(job_id, connection)
    columns = ", ".join(AS_TEXT[connection.vendor].format(column) for column in COLUMNS)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {columns} FROM queues_job WHERE id = %s", [adapted])
        (row,) = cursor.fetchall()
    return dict(zip(COLUMNS, row, strict=True))


def test_a_job_is_stored_as_djangos_own_insert_stores_it(path):
    parent = Job.objects.create(queue_name="insert_parent")
    batch = Batch.objects.create(name="insert_batch", total_jobs=2)
    workflow = Workflow.objects.create(name="insert_workflow", total_jobs=2)
    ours = _every_column_set(parent, batch, workflow, "slot-ours")
    djangos = _every_column_set(parent, batch, workflow, "slot-djangos")
    djangos.run_token, djangos.claimed_by = ours.run_token, ours.claimed_by
    Job.objects.bulk_create([djangos])  # Django's own insert, to compare with

    sql_store("default").insert_jobs([ours])

    mine, theirs = _raw_row(ours.id), _raw_row(djangos.id)
    for own in ("id", "unique_slot"):  # each job's own (the slot is unique)
        assert mine.pop(own) != theirs.pop(own)
    assert mine == theirs  # every other column, to the character
    stored = Job.objects.get(id=ours.id)
    for field in Job._meta.concrete_fields:
        assert getattr(stored, field.attname) == getattr(ours, field.attname), field.name


def test_a_job_of_defaults_is_stored_as_djangos_own_insert_stores_it(path):
    """NULLs, JSON defaults and the one instant of a new job, compared raw."""
    ours, djangos = Job(queue_name="insert_defaults"), Job(queue_name="insert_defaults")
    Job.objects.bulk_create([djangos])
    sql_store("default").insert_jobs([ours])
    mine, theirs = _raw_row(ours.id), _raw_row(djangos.id)
    for moment in ("created_at", "scheduled_at"):  # each job's own instant
        assert (mine.pop(moment) is None) is (theirs.pop(moment) is None) is False
    assert mine.pop("id") != theirs.pop("id")
    assert mine == theirs
    null = "NULL" if connection.vendor == "sqlite" else None  # quote(NULL) is its text
    assert mine["result"] == mine["timeout"] == null  # SQL NULL, not JSON null


def test_inserted_jobs_are_saved_ones_and_many_take_several_statements(monkeypatch):
    import queues.store.sql.store as engine_sql

    monkeypatch.setattr(engine_sql, "INSERT_BATCH", 3)
    jobs = [Job(queue_name="insert_many", payload={"i": i}) for i in range(7)]
    store = sql_store("default")
    assert [len(json.loads(rows)) for rows in store.job_rows(jobs)] == [3, 3, 1]
    store.insert_jobs(jobs)

    stored = Job.objects.filter(queue_name="insert_many").order_by("created_at", "id")
    assert sorted(job.payload["i"] for job in stored) == list(range(7))
    first = jobs[0]
    assert first._state.adding is False and first._state.db == "default"
    first.error_message = "changed"
    first.save()  # an UPDATE of the stored row, not a second insert
    assert Job.objects.get(id=first.id).error_message == "changed"
    assert Job.objects.filter(queue_name="insert_many").count() == 7


def test_statements_are_cut_by_size_and_a_larger_row_goes_alone(monkeypatch):
    """MariaDB refuses a statement over its max_allowed_packet, PostgreSQL a jsonb value over
    256 MiB: rows are cut by their text's size too, not only by their number."""
    import queues.store.sql.store as engine_sql

    big = Job(queue_name="insert_sized", payload={"text": "x" * 3000})
    small = [Job(queue_name="insert_sized", payload={"i": i}) for i in range(6)]
    jobs = [*small[:3], big, *small[3:]]
    store = sql_store("default")
    one_row = len(next(store.job_rows(small[:1])))
    monkeypatch.setattr(engine_sql, "INSERT_BYTES", 2 * one_row + 10)
    chunks = list(store.job_rows(jobs))
    assert [len(json.loads(rows)) for rows in chunks] == [2, 1, 1, 2, 1]
    assert all(len(rows) <= 2 * one_row + 10 for rows in chunks if "xxx" not in rows)
    store.insert_jobs(jobs)
    stored = Job.objects.filter(queue_name="insert_sized")
    assert stored.count() == 7 and stored.get(id=big.id).payload == big.payload


@pytest.mark.parametrize(
    "payload",
    [{"n": 1, "items": [1.5, "x", None, True]}, {"ünïcode": "✓", "n": [1]}, {"del": "a\x7fb"}],
    ids=["ascii", "unicode", "delete"],
)
def test_an_enqueued_payload_is_stored_as_djangos_own_insert_stores_it(payload, path):
    """The enqueue's insert writes the payload's text that its check made (an ASCII one)
    or encodes it again: either way the column holds Django's text, to the character."""
    ours = Job(queue_name="insert_payload", payload=payload)
    djangos = Job(queue_name="insert_payload", payload=payload)
    Job.objects.bulk_create([djangos])
    JobQueue().enqueue_many([ours])
    assert PAYLOAD_TEXT not in ours.__dict__  # the insert took it: it cannot go stale
    assert _raw_row(ours.id)["payload"] == _raw_row(djangos.id)["payload"]


def test_a_payload_replaced_after_its_check_is_stored_as_it_is_now(path):
    job = Job(queue_name="insert_payload", payload={"checked": 1})
    validate_job(job, timezone.now())
    assert PAYLOAD_TEXT in job.__dict__
    job.payload = {"replaced": 2}
    sql_store("default").insert_jobs([job])
    assert Job.objects.get(id=job.id).payload == {"replaced": 2}


def test_a_taken_unique_slot_fails_the_insert_with_an_integrity_error(path):
    """As from Django's insert: the enqueue's savepoint catches it and looks again. Nothing
    of the failed insert is stored."""
    store = sql_store("default")
    store.insert_jobs([Job(queue_name="insert_slot", unique_slot="slot-taken")])
    again = [Job(queue_name="insert_slot", payload={"i": i}) for i in range(3)]
    again.append(Job(queue_name="insert_slot", unique_slot="slot-taken"))
    with pytest.raises(IntegrityError):
        store.insert_jobs(again)
    assert Job.objects.filter(queue_name="insert_slot").count() == 1
