"""`manage.py filljobs --count 1000000`: fill the jobs table with a realistic mix, fast.

For measuring the dashboard on a big table: rows are built as plain tuples and written with
`executemany` in chunks (one transaction per chunk), bypassing the engine's per-job checks
and the ORM's per-value preparation, which would dominate at this size.

Jobs get tags as an application would give them (see TAGS): a region on most, a common
kind on some, rare ones, and a long tail of customer tags; each tag is also a `JobTag` row,
as the engine writes it.
"""

from __future__ import annotations

import random
import time
import uuid
from datetime import timedelta

from django.core.management.base import BaseCommand, CommandParser
from django.db import connection, transaction
from django.utils import timezone

from queues.enums import JobStatus
from queues.models import Job, JobTag

QUEUES = ["emails", "reports", "webhooks", "images", "billing", "search-index"]
QUEUE_WEIGHTS = [35, 10, 25, 15, 5, 10]
STATUSES = [
    JobStatus.COMPLETED,
    JobStatus.PENDING,
    JobStatus.RUNNING,
    JobStatus.FAILED,
    JobStatus.DEAD,
    JobStatus.TIMED_OUT,
]
STATUS_WEIGHTS = [86, 7, 1, 2, 3, 1]
PRIORITY_WEIGHTS = [5, 15, 60, 15, 5]
#: (tag, share of jobs that have it): "eu" on half of the jobs, "vip" on one in 200.
TAGS = [("eu", 0.5), ("us", 0.3), ("billing", 0.1), ("enterprise", 0.05), ("vip", 0.005)]
#: Besides, one job in four has one of this many customer tags ("customer-17").
CUSTOMERS = 5_000
ERRORS = [
    "SMTPServerDisconnected: Connection unexpectedly closed",
    "TimeoutError: upstream did not answer in 30 s",
    "KeyError: 'customer_id'",
    "HTTP 503 from https://hooks.example.com/endpoint",
    "Lease expired: the worker stopped heartbeating",
]


class Command(BaseCommand):
    help = "Insert COUNT jobs with a realistic mix of queues, statuses and priorities."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--count", type=int, default=1_000_000)
        parser.add_argument("--chunk", type=int, default=20_000)
        parser.add_argument("--days", type=float, default=7.0, help="spread over this many days")
        parser.add_argument("--seed", type=int, default=1)

    def handle(self, *args, count: int, chunk: int, days: float, seed: int, **options) -> None:
        rng = random.Random(seed)
        now = timezone.now()
        span = days * 86400
        started = time.monotonic()
        writer, tag_writer = _RowWriter(Job), _RowWriter(JobTag, skip=("id",))
        done = 0
        while done < count:
            size = min(chunk, count - done)
            jobs = [_job(rng, now, span) for _ in range(size)]
            rows = [writer.row(job) for job in jobs]
            tag_rows = [
                tag_writer.row(
                    {
                        "job_id": job["id"],
                        "tag": tag,
                        "queue_name": job["queue_name"],
                        "created_at": job["created_at"],
                        "priority": job["priority"],
                    }
                )
                for job in jobs
                for tag in job["tags"]
            ]
            with transaction.atomic(), connection.cursor() as cursor:
                writer.write(cursor, rows)
                tag_writer.write(cursor, tag_rows)
            done += size
            if options["verbosity"] > 1 or done == count or done % 200_000 == 0:
                rate = done / (time.monotonic() - started)
                self.stdout.write(f"{done:,} jobs ({rate:,.0f}/s)")
        self.stdout.write(
            self.style.SUCCESS(f"inserted {count:,} jobs in {time.monotonic() - started:.1f} s")
        )


#: Rows per INSERT (times ~40 columns: within SQLite's 32,766 parameters).
ROWS_PER_STATEMENT = 500


class _RowWriter:
    """The INSERT statement for every column of a table (but `skip`), and a converter per
    column from a Python value to what the driver takes."""

    def __init__(self, model, skip: tuple[str, ...] = ()) -> None:
        ops = connection.ops
        native_uuid = connection.features.has_native_uuid_field
        fields = [f for f in model._meta.concrete_fields if f.attname not in skip]
        self.defaults = {f.attname: f.get_default() for f in fields}
        self.converters = []
        for f in fields:
            kind = f.get_internal_type()
            if kind == "UUIDField" or (kind == "ForeignKey" and not native_uuid):
                conv = _uuid if native_uuid else _hex
            elif kind == "DateTimeField":
                conv = ops.adapt_datetimefield_value
            elif kind == "JSONField":
                conv = _json(f)
            else:
                conv = _same
            self.converters.append((f.attname, conv))
        columns = ", ".join(ops.quote_name(f.column) for f in fields)
        self.marks = "(" + ", ".join(["%s"] * len(fields)) + ")"
        table = ops.quote_name(model._meta.db_table)
        self.sql = f"INSERT INTO {table} ({columns}) VALUES "

    def write(self, cursor, rows: list[tuple]) -> None:
        """Insert `rows`, ROWS_PER_STATEMENT in each INSERT: PostgreSQL's statement-level
        count triggers (and every database's per-statement work) then run once per few
        hundred rows, not once per row (a row per statement filled 340 jobs a second)."""
        for start in range(0, len(rows), ROWS_PER_STATEMENT):
            part = rows[start : start + ROWS_PER_STATEMENT]
            sql = self.sql + ", ".join([self.marks] * len(part))
            cursor.execute(sql, [value for row in part for value in row])

    def row(self, values: dict) -> tuple:
        merged = {**self.defaults, **values}
        return tuple(conv(merged[name]) for name, conv in self.converters)


def _same(value):
    return value


def _uuid(value):
    return value


def _hex(value):
    return value.hex if value is not None else None


def _json(field):
    def convert(value):
        return None if value is None else field.get_db_prep_save(value, connection)

    return convert


def _job(rng: random.Random, now, span: float) -> dict:
    status = rng.choices(STATUSES, STATUS_WEIGHTS)[0]
    # Most jobs are recent: a square skews the age towards now.
    created = now - timedelta(seconds=span * rng.random() ** 2)
    job = _Row(
        id=uuid.uuid4(),
        queue_name=rng.choices(QUEUES, QUEUE_WEIGHTS)[0],
        payload={"n": rng.randrange(10**6), "to": f"user{rng.randrange(10**5)}@example.com"},
        status=status,
        priority=rng.choices(range(5), PRIORITY_WEIGHTS)[0],
        attempts=1,
        max_attempts=3,
        created_at=created,
        scheduled_at=created,
        depends_on=[],
        tags=_tags(rng),
    )
    job.meta = {"request_id": f"req-{rng.randrange(10**9):09d}"}
    run = timedelta(milliseconds=rng.randrange(5, 5000))
    if status == JobStatus.PENDING:
        job.attempts = 0
        job.scheduled_at = now + timedelta(seconds=rng.randrange(-600, 600))
        job.created_at = min(created, job.scheduled_at)
    elif status == JobStatus.RUNNING:
        job.started_at = job.last_heartbeat_at = now - run
        job.run_token = uuid.uuid4()
        # One in five has a lease that ran out: work for the reaper.
        job.lease_expires_at = now + timedelta(seconds=rng.choice([-90, 240, 270, 300, 300]))
    elif status == JobStatus.COMPLETED:
        job.started_at = created
        job.completed_at = created + run
        job.result = {"ok": True}
    else:
        job.attempts = 3
        job.started_at = created
        job.failed_at = created + run
        job.error_message = rng.choice(ERRORS)
        if status == JobStatus.TIMED_OUT:
            job.timed_out_at, job.failed_at = job.failed_at, None
    return job.__dict__


def _tags(rng: random.Random) -> list[str]:
    tags = [tag for tag, share in TAGS if rng.random() < share]
    if rng.random() < 0.25:
        tags.append(f"customer-{rng.randrange(CUSTOMERS)}")
    return tags


class _Row:
    def __init__(self, **values) -> None:
        self.__dict__.update(values)
