"""The SQL store: the `Store` protocol on one Django database. The claim, the writes of runs
and the reaper's lock are the vendor's catalogue (`queues/store/catalogue/<vendor>.sql`, run on raw
cursors); the rest is the ORM. What differs by vendor is in the module of each
(`postgresql`, `mysql`, `sqlite`); `sql_store(using)` in this package picks it."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Collection, Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from functools import partial
from itertools import repeat
from operator import attrgetter

from django.db import DatabaseError, connections, transaction
from django.db.models import F, Q

from queues.enums import FAILURE_STATUSES, JobStatus
from queues.models import FailedAttempt, Job, JobDependency, QueueConfig, QueuePause, ReaperRun
from queues.store import session
from queues.store.base import ClaimParams, Group, Match
from queues.store.catalogue import queries_for, statements
from queues.store.counters.counts import counts_by_queue
from queues.store.each import each_row
from queues.store.rows import RowReader
from queues.tags import JobTag, tag_rows

#: Rows per INSERT statement of a bulk insert.
INSERT_BATCH = 500
#: At most this much JSON text (ASCII: characters are bytes) a statement of new jobs, a
#: single larger row alone: MariaDB refuses a statement over its max_allowed_packet (16 MiB
#: by default; the driver's escaping can double the text) and PostgreSQL a jsonb value over
#: 256 MiB, and 500 jobs of payloads under the 1 MB that the checks allow could be either.
INSERT_BYTES = 4 * 1024 * 1024


def json_text(field, value) -> str | None:
    """The text a JSON column stores for `value` (None: SQL NULL): what Django writes for a
    JSONField on every backend, its encoder's `json.dumps` (which PostgreSQL's Jsonb
    adapter wraps)."""
    return None if value is None else json.dumps(field.get_prep_value(value), cls=field.encoder)


def _column_adapter(field):
    """How `job_rows` writes one column: `adapt(job, connection)`, the value Django's
    bulk_create would bind (the field's `pre_save` and `get_db_prep_save`) as JSON."""
    if getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False):
        read = partial(field.pre_save, add=True)
    else:  # what pre_save returns for every other field, without the call
        read = attrgetter(field.attname)
    if field.get_internal_type() == "JSONField":
        # Not the adapter that get_db_prep_save gives on PostgreSQL: the text it would send.
        return lambda job, connection: json_text(field, read(job))
    save = field.get_db_prep_save

    def adapt(job, connection):
        value = read(job)
        return None if value is None else _as_json(save(value, connection))

    return adapt


def _as_json(value):
    """A column's adapted value as JSON: text, numbers and NULL as they are, a boolean as 0
    or 1, an interval and a timestamptz as their text (PostgreSQL's; other vendors'
    adapters give these as numbers and text already), a native UUID as its text."""
    if value is None or isinstance(value, str | float):
        return value
    if isinstance(value, int):
        return int(value)  # a bool too
    if isinstance(value, timedelta):
        # PostgreSQL's interval, in the text psycopg sends ("2 days 0:00:05"): as
        # microseconds, an interval of two days would be stored as 48 hours.
        return str(value).replace(",", "")
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


#: `job_rows`' adapter of each of Job's columns, in the model's order.
_COLUMN_ADAPTERS = [_column_adapter(field) for field in Job._meta.concrete_fields]


class SqlStore:
    vendor = ""
    claim_is_one_statement = False

    def __init__(self, using: str) -> None:
        self.using = using
        self.queries = queries_for(self.vendor)
        self.statements = {name: statements(sql) for name, sql in self.queries.items()}
        self._reader: RowReader | None = None
        self._uuid_converters: list | None = None

    @property
    def connection(self):
        return connections[self.using]

    @property
    def reader(self) -> RowReader:
        # One reader per store; connections are per thread but share a vendor.
        if self._reader is None:
            self._reader = RowReader(self.connection)
        return self._reader

    def cursor(self):
        """A cursor for the catalogue's statements (with Django's error wrapping)."""
        return self.connection.cursor()

    # Parameters -------------------------------------------------------------------------
    def dt(self, value: datetime | None):
        return self.connection.ops.adapt_datetimefield_value(value)

    def uuid(self, value: uuid.UUID | str | None):
        return None if value is None else self.adapt_ids([value])[0]

    def adapt_ids(self, values: Sequence[uuid.UUID]) -> list:
        """Ids as the id columns compare them (adapted by the field, as the ORM's are)."""
        connection = self.connection  # once: each lookup is a thread-local read
        adapt = Job._meta.get_field("run_token").get_db_prep_value
        return [
            adapt(value if isinstance(value, uuid.UUID) else uuid.UUID(str(value)), connection)
            for value in values
        ]

    def id_list(self, adapted: list):
        """Adapted ids as one parameter (`= ANY(%(ids)s)`, `IN %(ids)s`, `json_each`)."""
        return adapted

    def uuids(self, values: Sequence[uuid.UUID]):
        return self.id_list(self.adapt_ids(values))

    def results(self, adapted: list, values) -> str:
        """The results of the runs whose ids are `adapted` (None: no result) as one JSON
        array of [id, result] pairs, each result the JSON text the column stores
        (`json_text`). One string, encoded in C: psycopg dumps an array of Jsonb element by
        element in Python (about 5 µs a result, measured). The id as the column compares
        it: `str()` gives the dashed form that PostgreSQL and MariaDB's native UUID take,
        and the 32 hex digits that SQLite and MySQL store."""
        field = Job._meta.get_field("result")
        return json.dumps([
            [str(job_id), json_text(field, value)]
            for job_id, value in zip(adapted, values, strict=True)
        ])  # fmt: skip

    def job_rows(self, jobs: Sequence[Job]) -> Iterator[str]:
        """New jobs as JSON arrays of rows for the catalogue's `insert_jobs`, one a statement
        (at most `INSERT_BATCH` rows and about `INSERT_BYTES` of text): each row the values
        of the job's columns in the model's order, each as Django's bulk_create would bind
        it (the field's `pre_save` and `get_db_prep_save`), then as JSON: a JSON column's
        value as the JSON text Django writes, an id or a time as its text, a duration as
        microseconds (PostgreSQL: its interval's text), a boolean as 0 or 1."""
        connection = self.connection  # once: each lookup is a thread-local read
        chunk: list[str] = []
        size = 0
        for job in jobs:
            row = json.dumps([adapt(job, connection) for adapt in _COLUMN_ADAPTERS])
            if chunk and (len(chunk) == INSERT_BATCH or size + len(row) > INSERT_BYTES):
                yield "[" + ",".join(chunk) + "]"
                chunk, size = [], 0
            chunk.append(row)
            size += len(row) + 1
        if chunk:
            yield "[" + ",".join(chunk) + "]"

    def read_uuid(self, value) -> uuid.UUID | None:
        """An id or token column of a raw row, as the ORM would read it."""
        if self._uuid_converters is None:
            self._uuid_converters = Job._meta.get_field("run_token").get_db_converters(
                self.connection
            )
        for convert in self._uuid_converters:
            value = convert(value, None, self.connection)
        return value if isinstance(value, uuid.UUID) or value is None else uuid.UUID(str(value))

    # Transactions -----------------------------------------------------------------------
    def is_retryable(self, exc: DatabaseError) -> bool:
        """A transient lock conflict, worth running the whole transaction again for."""
        return False

    def atomic(self, fn, *, single_statement: bool = False, attempts: int = 5):
        """Outside a caller's transaction a single statement runs in autocommit (no BEGIN
        and COMMIT round trips); inside one, a conflict is the outer transaction's to
        retry."""
        for attempt in range(attempts):
            try:
                if single_statement and not self.connection.in_atomic_block:
                    return fn()
                with session.atomic(self.connection):
                    return fn()
            except DatabaseError as exc:
                if attempt == attempts - 1 or not self.is_retryable(exc):
                    raise
                if self.connection.in_atomic_block:
                    raise
                time.sleep(0.005 * (2**attempt))
        raise AssertionError("unreachable")  # pragma: no cover

    def on_commit(self, fn) -> None:
        # Robust: what runs after the commit must not make the caller take it for failed.
        transaction.on_commit(fn, using=self.using, robust=True)

    # The catalogue ----------------------------------------------------------------------
    def claimable_levels(self, queue: str, now: datetime) -> list[int]:
        with self.cursor() as cursor:
            cursor.execute(self.queries["claimable_levels"], {"queue": queue, "now": self.dt(now)})
            return [int(row[0]) for row in cursor.fetchall()]

    def next_due(self, queue: str) -> datetime | None:
        with self.cursor() as cursor:
            cursor.execute(self.queries["next_due"], {"queue": queue})
            row = cursor.fetchone()
        value = row[0] if row else None
        if value is None:
            return None
        # The ORM's conversions of the column (SQLite returns text, MySQL naive datetimes).
        field = Job._meta.get_field("scheduled_at")
        expression = field.get_col(Job._meta.db_table)
        for convert in self.connection.ops.get_db_converters(expression):
            value = convert(value, expression, self.connection)
        return value

    def data_version(self) -> int | None:
        sql = self.queries["data_version"]
        if not sql:
            return None
        with self.connection.cursor() as cursor:
            cursor.execute(sql)
            return int(cursor.fetchone()[0])

    def claim(self, params: ClaimParams) -> list[Job]:
        values = {
            "queue": params.queue,
            "limit": params.limit,
            "now": self.dt(params.now),
            "lease_expires_at": self.dt(params.lease_expires_at),
            "token": self.uuid(params.token),
            "claimed_by": self.uuid(params.claimed_by),
        }
        name = "claim_batch"
        if params.priority is not None:
            values["priority"] = params.priority
            name = "claim_batch_at_level"
        with self.cursor() as cursor:
            cursor.execute(self.queries[name], values)
            return self.reader.read(cursor.description, cursor.fetchall())

    def lock_queue_limit(self, queue: str) -> QueueConfig | None:
        rows = self._configs().raw(self.queries["lock_queue_limit"], {"queue": queue})
        return next(iter(rows), None)

    def spend_rate_tokens(self, queue: str, tokens: int, refilled_at: datetime) -> None:
        self._configs().filter(queue_name=queue).update(
            rate_tokens=tokens, rate_refilled_at=refilled_at
        )

    def count_running(self, queue: str) -> int:
        return int(self._one("count_running", queue) or 0)

    def _one(self, name: str, queue: str):
        """The first column of the first row of the query `name` (None: no row)."""
        with self.cursor() as cursor:
            cursor.execute(self.queries[name], {"queue": queue})
            row = cursor.fetchone()
        return None if row is None else row[0]

    def lock_expired_leases(self, now: datetime, queue: str | None, limit: int):
        with self.cursor() as cursor:
            cursor.execute(
                self.queries["lock_expired_leases"],
                {"now": self.dt(now), "queue": queue, "limit": limit},
            )
            rows = cursor.fetchall()
        return [(self.read_uuid(job_id), self.read_uuid(token)) for job_id, token in rows]

    def running_tokens(self, ids) -> dict[uuid.UUID, uuid.UUID]:
        running = self._jobs().filter(id__in=list(ids), status=JobStatus.RUNNING)
        return dict(running.values_list("id", "run_token"))

    def complete_runs(self, ids, token, now, results=None) -> dict[uuid.UUID, bool]:
        # A job listed twice is one row to write (the join of ids and results must not
        # meet it twice).
        by_id = dict(zip(ids, results if results is not None else repeat(None)))
        adapted = self.adapt_ids(by_id)
        rows = self._run_statements("complete_runs", {
            "ids": self.id_list(adapted), "token": self.uuid(token), "now": self.dt(now),
            "results": self.results(adapted, by_id.values()),
        })  # fmt: skip
        return {self.read_uuid(job_id): bool(dependents) for job_id, dependents in rows}

    def lock_runs(self, ids, token) -> dict[uuid.UUID, bool]:
        rows = self._write_runs("lock_runs", ids, token, None)
        return {self.read_uuid(job_id): bool(dependents) for job_id, dependents in rows}

    def update_each(self, rows: Mapping[uuid.UUID, Mapping]) -> None:
        if rows:
            self._jobs().filter(id__in=list(rows)).update(
                **each_row(self.connection, rows, self.uuid)
            )

    def start_runs(self, ids, token, now) -> dict[uuid.UUID, tuple[bool, bool]]:
        rows = self._write_runs("start_runs", ids, token, now)
        return {
            self.read_uuid(job_id): (bool(paused), bool(batch_failed))
            for job_id, paused, batch_failed in rows
        }

    def startable_runs(self, ids) -> dict[uuid.UUID, uuid.UUID]:
        if not ids:
            return {}  # MySQL has no empty IN ()
        with self.cursor() as cursor:
            cursor.execute(self.queries["startable_runs"], {"ids": self.uuids(ids)})
            return {self.read_uuid(i): self.read_uuid(t) for i, t in cursor.fetchall()}

    def update_runs(self, ids, token, fields: Mapping) -> int:
        return self._runs(ids, token).update(**fields)

    def release_runs(self, ids, token) -> int:
        return self._runs(ids, token).update(
            status=JobStatus.PENDING,
            attempts=F("attempts") - 1,
            started_at=None,
            last_heartbeat_at=None,
            lease_expires_at=None,
            run_token=None,
        )

    def _runs(self, ids, token):
        return self._jobs().filter(id__in=list(ids), status=JobStatus.RUNNING, run_token=token)

    def _write_runs(self, name: str, ids, token, now, **extra) -> list:
        params = {"ids": self.uuids(ids), "token": self.uuid(token), "now": self.dt(now), **extra}
        return self._run_statements(name, params)

    def _run_statements(self, name: str, params: Mapping) -> list:
        """Run the catalogue's statements of `name`; the rows of the last one that has any."""
        rows: list = []
        with self.cursor() as cursor:
            for sql in self.statements[name]:
                cursor.execute(sql, params)
                if cursor.description is not None:
                    rows = cursor.fetchall()
        return rows

    # Jobs (the ORM) ---------------------------------------------------------------------
    def insert_jobs(self, jobs: Sequence[Job]) -> None:
        if any(job.unique_slot is not None for job in jobs):
            # A slot another enqueue took fails the insert, and the enqueue looks again in
            # the same transaction: the savepoint keeps it usable (PostgreSQL aborts a
            # transaction at its first error). Jobs without keys need none.
            with transaction.atomic(using=self.using):
                self._insert(jobs)
        else:
            self._insert(jobs)

    def _insert(self, jobs: Sequence[Job]) -> None:
        with self.cursor() as cursor:
            for rows in self.job_rows(jobs):
                cursor.execute(self.queries["insert_jobs"], {"rows": rows})
        for job in jobs:  # saved, as bulk_create leaves them: a save() now is an UPDATE
            job._state.adding = False
            job._state.db = self.using
        edges = [
            JobDependency(job_id=job.id, parent_id=uuid.UUID(p))
            for job in jobs
            for p in job.depends_on
        ]
        if edges:
            self._edges().bulk_create(edges, batch_size=INSERT_BATCH)
        tags = tag_rows(jobs)
        if tags:  # jobs without tags: no statement
            JobTag.objects.using(self.using).bulk_create(tags, batch_size=INSERT_BATCH)

    def replace_tags(self, job: Job) -> None:
        tags = JobTag.objects.using(self.using)
        tags.filter(job_id=job.id).delete()
        tags.bulk_create(tag_rows([job]))

    def _jobs(self, match: Match | None = None):
        jobs = Job.objects.using(self.using)
        if match is None:
            return jobs
        lookups = {
            "id__in": None if match.ids is None else list(match.ids),
            "queue_name": match.queue_name,
            "status__in": match.statuses(),
            "run_token": match.run_token,
            "batch_id": match.batch_id,
            "workflow_id": match.workflow_id,
            "dependency_status": match.dependency_status,
            "claimed_by": match.claimed_by,
            "unique_slot__in": None if match.unique_slots is None else list(match.unique_slots),
            # One row per (job, tag): the join cannot repeat a job.
            "tag_rows__tag": match.tag,
        }
        return jobs.filter(**{k: v for k, v in lookups.items() if v is not None})

    def find_jobs(self, match: Match, limit: int | None = None) -> list[Job]:
        jobs = self._jobs(match)
        return list(jobs if limit is None else jobs[:limit])

    def lock_jobs(self, match: Match) -> list[Job]:
        return list(self._jobs(match).select_for_update().order_by("id"))

    def update_jobs(self, match: Match, fields: Mapping) -> int:
        return self._jobs(match).update(**fields)

    def delete_jobs(self, match: Match) -> int:
        # Django deletes the dependency edges and the history rows (on_delete=CASCADE: one
        # DELETE each) in the same transaction. Its collector reads the rows it deletes: the
        # ids alone are enough (the whole rows cost a third of a 1,000-job purge's time).
        _, deleted = self._jobs(match).only("id").delete()
        return deleted.get(Job._meta.label, 0)

    def count_jobs(self, queue: str) -> dict[str, int]:
        # The trigger-kept JobCount rows: a few rows, never a scan of the jobs table.
        return counts_by_queue(self.using, queue).get(queue) or dict.fromkeys(JobStatus.values, 0)

    def declared_jobs(self) -> list[Job]:
        # Two ranges of the (recurring, next_run_at) index, as the recurring page reads it
        # (MySQL and MariaDB have it without its cron_schedule condition): a disabled
        # recurring job keeps its next run, a plain job has none.
        recurring = Q(recurring=True) | Q(recurring=False, next_run_at__isnull=False)
        jobs = self._jobs().filter(recurring, cron_schedule__isnull=False)
        return list(jobs.filter(schedule_name__isnull=False))

    # The error history ------------------------------------------------------------------
    def _attempts(self):
        return FailedAttempt.objects.using(self.using)

    def insert_attempts(self, rows: Sequence[FailedAttempt]) -> None:
        self._attempts().bulk_create(rows, batch_size=INSERT_BATCH)

    def find_attempts(self, job_id) -> list[FailedAttempt]:
        return list(self._attempts().filter(job_id=job_id).order_by("id"))

    def update_attempt(self, job_id, token, fields: Mapping) -> int:
        return self._attempts().filter(job_id=job_id, run_token=token).update(**fields)

    # Dependencies -----------------------------------------------------------------------
    def _edges(self):
        return JobDependency.objects.using(self.using)

    def dependents(self, ids: Collection[uuid.UUID]) -> set[uuid.UUID]:
        return set(self._edges().filter(parent_id__in=list(ids)).values_list("job_id", flat=True))

    def dependents_of(self, ids: Collection[uuid.UUID]) -> dict[uuid.UUID, set[uuid.UUID]]:
        children: dict[uuid.UUID, set[uuid.UUID]] = {}
        edges = self._edges().filter(parent_id__in=list(ids)).values_list("parent_id", "job_id")
        for parent, child in edges:
            children.setdefault(parent, set()).add(child)
        return children

    def blocked(self, ids: Collection[uuid.UUID]) -> set[uuid.UUID]:
        waiting = self._edges().filter(job_id__in=list(ids))
        unfinished = waiting.exclude(parent__status=JobStatus.COMPLETED)
        return set(unfinished.values_list("job_id", flat=True))

    # Batches and workflows --------------------------------------------------------------
    def insert_group(self, row: Group) -> None:
        row.save(using=self.using, force_insert=True)

    def get_group(self, model: type[Group], group_id) -> Group | None:
        return model.objects.using(self.using).filter(id=group_id).first()

    def lock_group(self, model: type[Group], group_id) -> Group | None:
        return model.objects.using(self.using).select_for_update().filter(id=group_id).first()

    def update_group(self, model: type[Group], group_id, fields: Mapping) -> None:
        model.objects.using(self.using).filter(id=group_id).update(**fields)

    def first_failure(self, batch_id, excluding: str):
        failures = self._jobs(Match(batch_id=batch_id, status=FAILURE_STATUSES))
        first = failures.exclude(error_message__startswith=excluding)
        return first.values_list("id", flat=True).first()

    # Pauses and reaper runs -------------------------------------------------------------
    def _pauses(self):
        return QueuePause.objects.using(self.using)

    def pause(self, row: QueuePause) -> None:
        fields = {"paused_at": row.paused_at, "paused_by": row.paused_by, "reason": row.reason}
        self._pauses().update_or_create(queue_name=row.queue_name, defaults=fields)

    def resume(self, queue: str) -> None:
        self._pauses().filter(queue_name=queue).delete()

    def is_paused(self, queue: str) -> bool:
        return self._pauses().filter(queue_name=queue).exists()

    # Queue configurations ---------------------------------------------------------------
    def _configs(self):
        return QueueConfig.objects.using(self.using)

    def get_queue_config(self, queue: str) -> QueueConfig | None:
        return self._configs().filter(queue_name=queue).first()

    def set_queue_config(self, queue: str, fields: Mapping) -> QueueConfig:
        row, _ = self._configs().update_or_create(queue_name=queue, defaults=fields)
        return row

    def insert_reaper_run(self, row: ReaperRun) -> None:
        row.save(using=self.using)
