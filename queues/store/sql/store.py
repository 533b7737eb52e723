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
from queues.validation import PAYLOAD_TEXT, StoredJSON

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
    """How `job_values` writes one column's value: `adapt(value, connection)`, the value
    Django's bulk_create would bind (the field's `get_db_prep_save`) as JSON."""
    kind = field.get_internal_type()
    if kind == "JSONField":
        # Not the adapter that get_db_prep_save gives on PostgreSQL: the text it would send.
        # An empty list or dict (most jobs' tags, meta and dependencies) is its text at once.
        def adapt_json(value, connection):
            if not value and type(value) in _EMPTY_JSON:
                return _EMPTY_JSON[type(value)]
            return json_text(field, value)

        return adapt_json
    save = field.get_db_prep_save
    if kind == "DateTimeField":
        # An aware datetime (what the enqueue leaves) skips get_prep_value's checks, which
        # only make a naive one aware (with a warning); the vendor's adaptation stays.
        def adapt_time(value, connection):
            if type(value) is datetime and value.tzinfo is not None:
                return _as_json(connection.ops.adapt_datetimefield_value(value))
            return _as_json(save(value, connection))

        return adapt_time

    plain = _PLAIN_TYPES.get(kind)
    if plain is not None:
        # A subclass's value (an enum's member: JobStatus, JobPriority) is what the field's
        # get_db_prep_save and `_as_json` make of it: a text as it is, a number as an int.
        def adapt_plain(value, connection):
            if isinstance(value, plain):
                return value if plain is str else int(value)
            return _as_json(save(value, connection))

        return adapt_plain
    if kind == "BooleanField":

        def adapt_bool(value, connection):
            if type(value) is bool:
                return int(value)
            return _as_json(save(value, connection))

        return adapt_bool
    if kind == "UUIDField":
        # A native uuid column takes the id's text; the others store its hex.
        def adapt_uuid(value, connection):
            if type(value) is uuid.UUID:
                return str(value) if connection.features.has_native_uuid_field else value.hex
            return _as_json(save(value, connection))

        return adapt_uuid

    def adapt(value, connection):
        return _as_json(save(value, connection))

    return adapt


class _Adapt:
    """No value has this type: a column whose every value goes through its adapter."""


#: By field type, the value type that a column stores as it is (`job_values`). A boolean is
#: not among them: it is written as 0 or 1.
_PLAIN_TYPES = {
    "CharField": str,
    "TextField": str,
    "SmallIntegerField": int,
    "IntegerField": int,
    "PositiveIntegerField": int,
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


#: Job's columns that `pre_save` sets on an insert (auto_now and auto_now_add): none today.
_STAMPED = [
    field
    for field in Job._meta.concrete_fields
    if getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False)
]
#: Every column's value of a job, in the model's order, in one call.
_READ_ROW = attrgetter(*(field.attname for field in Job._meta.concrete_fields))
#: By column, the one value type that every vendor's get_db_prep_save and `_as_json` give
#: back as it is, told by its exact type (`_Adapt`: none, every value goes to the adapter).
_AS_IS = tuple(
    _PLAIN_TYPES.get(field.get_internal_type(), _Adapt) for field in Job._meta.concrete_fields
)
#: Where the payload is in a row.
_PAYLOAD = [field.attname for field in Job._meta.concrete_fields].index("payload")
#: `job_values`' adapter of each of Job's columns, in the model's order.
_COLUMN_ADAPTERS = tuple(_column_adapter(field) for field in Job._meta.concrete_fields)


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

    def job_values(self, jobs: Sequence[Job]) -> Iterator[list]:
        """Each new job's row: the values of its columns in the model's order, each as
        Django's bulk_create would bind it (the field's `pre_save` and `get_db_prep_save`),
        as JSON would carry it: a JSON column's value as the JSON text Django writes, an id
        or a time as its text, a duration as microseconds (PostgreSQL: its interval's
        text), a boolean as 0 or 1."""
        connection = self.connection  # once: each lookup is a thread-local read
        for job in jobs:
            for field in _STAMPED:
                field.pre_save(job, add=True)
            # A plain value or NULL as it is, the rest through the column's adapter: one
            # loop in C and a comprehension instead of a call a column (38 of them).
            read = _READ_ROW(job)
            checked = job.__dict__.pop(PAYLOAD_TEXT, None)
            if checked is not None and checked[0] is read[_PAYLOAD]:
                read = list(read)
                read[_PAYLOAD] = checked[1]  # the text its check made, which Django's equals
            yield [
                value if value is None or type(value) is plain else adapt(value, connection)
                for value, plain, adapt in zip(read, _AS_IS, _COLUMN_ADAPTERS)
            ]

    def job_rows(self, jobs: Sequence[Job]) -> Iterator[str]:
        """New jobs as JSON arrays of rows (`job_values`) for the catalogue's `insert_jobs`,
        one a statement: at most `INSERT_BATCH` rows and about `INSERT_BYTES` of text."""
        chunk: list[str] = []
        size = 0
        for values in self.job_values(jobs):
            row = json.dumps(values)
            if chunk and (len(chunk) == INSERT_BATCH or size + len(row) > INSERT_BYTES):
                yield "[" + ",".join(chunk) + "]"
                chunk, size = [], 0
            chunk.append(row)
            size += len(row) + 1
        if chunk:
            yield "[" + ",".join(chunk) + "]"

    def insert_job_rows(self, jobs: Sequence[Job]) -> None:
        """The rows of new jobs, inserted as they are (no edges, no tags)."""
        with self.cursor() as cursor:
            for rows in self.job_rows(jobs):
                cursor.execute(self.queries["insert_jobs"], {"rows": rows})

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
        self.insert_job_rows(jobs)
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
