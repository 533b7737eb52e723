"""`SqlStore`, the `Store` protocol on one Django database, made of its parts (`runs`: the
catalogue's claims and runs; `orm`: the rows through the ORM; `upkeep`: purges, pruning, bulk
operations) around this core: connections, parameters, transactions and the inserts. Each
vendor's module (`postgresql`, `mysql`, `sqlite`) subclasses it. See docs/design/store.md."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta
from functools import partial
from operator import attrgetter

from django.db import DatabaseError, connections, transaction

from queues.models import FailedAttempt, Job, JobDependency
from queues.store.catalogue import queries_for, statements
from queues.store.sql import session
from queues.store.sql.archive import SqlArchive
from queues.store.sql.orm import SqlRows
from queues.store.sql.rows import RowReader
from queues.store.sql.runs import SqlRuns
from queues.store.sql.upkeep import SqlUpkeep
from queues.tags import JobTag, tag_rows
from queues.validation import StoredJSON

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
    adapter wraps); a result's text that its check made already (`StoredJSON`), as it is."""
    if value is None:
        return None
    if type(value) is StoredJSON:
        return str(value)
    return json.dumps(field.get_prep_value(value), cls=field.encoder)


def _column_adapter(field):
    """How `job_rows` writes one column: `adapt(job, connection)`, the value Django's
    bulk_create would bind (the field's `pre_save` and `get_db_prep_save`) as JSON."""
    if getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False):
        read = partial(field.pre_save, add=True)
    else:  # what pre_save returns for every other field, without the call
        read = attrgetter(field.attname)
    kind = field.get_internal_type()
    if kind == "JSONField":
        # Not the adapter that get_db_prep_save gives on PostgreSQL: the text it would send.
        # An empty list or dict (most jobs' tags, meta and dependencies) is its text at once.
        def adapt_json(job, connection):
            value = read(job)
            if not value and type(value) in _EMPTY_JSON:
                return _EMPTY_JSON[type(value)]
            return json_text(field, value)

        return adapt_json
    save = field.get_db_prep_save
    # The values that every vendor's get_db_prep_save and `_as_json` give back as they are
    # (or a boolean as 0 or 1), told by their exact type: no call through the field.
    plain = _PLAIN_TYPES.get(kind)

    def adapt(job, connection):
        value = read(job)
        if value is None:
            return None
        if type(value) is plain:
            return int(value) if plain is bool else value
        return _as_json(save(value, connection))

    return adapt


#: By field type, the value type that a column stores as it is (`_column_adapter`).
_PLAIN_TYPES = {
    "CharField": str,
    "TextField": str,
    "SmallIntegerField": int,
    "IntegerField": int,
    "PositiveIntegerField": int,
    "BooleanField": bool,
}
#: The JSON text of an empty list and an empty dict, as `json.dumps` writes them.
_EMPTY_JSON = {list: "[]", dict: "{}"}


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


class SqlStore(SqlRuns, SqlRows, SqlUpkeep, SqlArchive):
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

    def results(self, adapted: list, values, tokens: list | None = None) -> str:
        """The results of the runs whose ids are `adapted` (None: no result) as one JSON
        array of [id, result] pairs (with `tokens`, [id, token, result] triples, the
        tokens adapted as the ids), each result the JSON text the column stores
        (`json_text`). One string, encoded in C: psycopg dumps an array of Jsonb element by
        element in Python (about 5 µs a result, measured). The id as the column compares
        it: `str()` gives the dashed form that PostgreSQL and MariaDB's native UUID take,
        and the 32 hex digits that SQLite and MySQL store."""
        field = Job._meta.get_field("result")
        if tokens is not None:
            return json.dumps([
                [str(job_id), str(token), json_text(field, value)]
                for job_id, token, value in zip(adapted, tokens, values, strict=True)
            ])  # fmt: skip
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

    # Inserts ----------------------------------------------------------------------------
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
            JobDependency.objects.using(self.using).bulk_create(edges, batch_size=INSERT_BATCH)
        tags = tag_rows(jobs)
        if tags:  # jobs without tags: no statement
            JobTag.objects.using(self.using).bulk_create(tags, batch_size=INSERT_BATCH)

    def insert_attempts(self, rows: Sequence[FailedAttempt]) -> None:
        FailedAttempt.objects.using(self.using).bulk_create(rows, batch_size=INSERT_BATCH)
