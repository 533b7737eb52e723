"""Per-vendor behaviour of the engine. Each dialect runs its own SQL catalogue
(`queues/sql/<vendor>.sql`); everything else the engine does goes through the ORM."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Sequence
from datetime import datetime
from functools import cache

from django.db import DatabaseError, OperationalError, connections

from ..enums import JobStatus
from ..exceptions import UnsupportedDatabase
from ..models import Job
from ..sql import queries_for, statements
from . import session
from .rows import RowReader

# Transient lock conflicts worth retrying the whole transaction for.
_MYSQL_RETRYABLE = {1213, 1205}  # deadlock, lock wait timeout
_PG_RETRYABLE = {"40P01", "40001", "55P03"}  # deadlock, serialization failure, lock not available


class Dialect:
    vendor = ""

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
        # One reader per dialect; connections are per thread but share a vendor.
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
        if value is None:
            return None
        value = value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))
        return Job._meta.get_field("run_token").get_db_prep_value(value, self.connection)

    def uuids(self, values: Sequence[uuid.UUID]):
        """A list of ids as one parameter (`= ANY(%(ids)s)`, `IN %(ids)s`, `json_each`)."""
        return [self.uuid(value) for value in values]

    def read_uuid(self, value) -> uuid.UUID | None:
        """An id or token column of a raw row, as the ORM would read it."""
        if self._uuid_converters is None:
            self._uuid_converters = Job._meta.get_field("run_token").get_db_converters(
                self.connection
            )
        for convert in self._uuid_converters:
            value = convert(value, None, self.connection)
        return _as_uuid(value)

    # Transactions -----------------------------------------------------------------------
    def is_retryable(self, exc: DatabaseError) -> bool:
        return False

    #: The strict claim is one statement (claim_batch): it needs no transaction of its own.
    claim_is_one_statement = False

    def atomic_retrying(self, fn, attempts: int = 5, single_statement: bool = False):
        """Run `fn` in a transaction, again from the start after a transient lock conflict.
        `single_statement`: `fn` runs one statement, atomic by itself, so outside a caller's
        transaction it runs in autocommit (no BEGIN and COMMIT round trips)."""
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
                    raise  # an outer transaction owns the retry
                time.sleep(0.005 * (2**attempt))
        raise AssertionError("unreachable")  # pragma: no cover

    # Queries ----------------------------------------------------------------------------
    def claimable_levels(self, queue: str, now: datetime) -> list[int]:
        with self.cursor() as cursor:
            cursor.execute(self.queries["claimable_levels"], {"queue": queue, "now": self.dt(now)})
            return [int(row[0]) for row in cursor.fetchall()]

    def claim(
        self,
        queue: str,
        limit: int,
        now: datetime,
        lease_expires_at: datetime,
        token: uuid.UUID,
        priority: int | None = None,
    ) -> list[Job]:
        """Claim up to `limit` jobs; runs inside the caller's transaction."""
        params = {
            "queue": queue,
            "limit": limit,
            "now": self.dt(now),
            "lease_expires_at": self.dt(lease_expires_at),
            "token": self.uuid(token),
        }
        name = "claim_batch"
        if priority is not None:
            params["priority"] = priority
            name = "claim_batch_at_level"
        with self.cursor() as cursor:
            cursor.execute(self.queries[name], params)
            return self.reader.read(cursor.description, cursor.fetchall())

    def lock_expired_leases(self, now: datetime, queue: str | None, limit: int):
        with self.cursor() as cursor:
            cursor.execute(
                self.queries["lock_expired_leases"],
                {"now": self.dt(now), "queue": queue, "limit": limit},
            )
            rows = cursor.fetchall()
        return [(self.read_uuid(job_id), self.read_uuid(token)) for job_id, token in rows]

    def complete_runs(
        self, ids: Sequence[uuid.UUID], token: uuid.UUID, now: datetime
    ) -> list[tuple[uuid.UUID, bool]]:
        """Complete the plain runs `ids` of claim `token` (inside the caller's transaction):
        (id, has dependents) of each run that was still this claim's."""
        rows = self._write_runs("complete_runs", ids, token, now)
        return [(self.read_uuid(job_id), bool(dependents)) for job_id, dependents in rows]

    def start_runs(
        self, ids: Sequence[uuid.UUID], token: uuid.UUID, now: datetime
    ) -> dict[uuid.UUID, tuple[bool, bool]]:
        """Record the start of the held runs `ids` of claim `token` (inside the caller's
        transaction): {id: (its queue is paused, its fail-fast batch failed)} of each run
        that was still this claim's."""
        rows = self._write_runs("start_runs", ids, token, now)
        return {
            self.read_uuid(job_id): (bool(paused), bool(batch_failed))
            for job_id, paused, batch_failed in rows
        }

    def _write_runs(self, name: str, ids, token, now) -> list:
        params = {"ids": self.uuids(ids), "token": self.uuid(token), "now": self.dt(now)}
        rows: list = []
        with self.cursor() as cursor:
            for sql in self.statements[name]:
                cursor.execute(sql, params)
                if cursor.description is not None:
                    rows = cursor.fetchall()
        return rows


def _as_uuid(value):
    return value if isinstance(value, uuid.UUID) or value is None else uuid.UUID(str(value))


class PostgresDialect(Dialect):
    vendor = "postgresql"
    claim_is_one_statement = True

    def cursor(self):
        # Server-binding and prepared: Django's cursors bind client-side, so each run would
        # be parsed and planned anew (see session.py).
        return session.server_cursor(self.connection)

    def is_retryable(self, exc: DatabaseError) -> bool:
        cause = exc.__cause__
        return getattr(cause, "sqlstate", None) in _PG_RETRYABLE


class SQLiteDialect(Dialect):
    vendor = "sqlite"

    def uuids(self, values):
        # SQLite has no array parameter: the catalogue reads the list with json_each.
        return json.dumps(super().uuids(values))

    def is_retryable(self, exc: DatabaseError) -> bool:
        # The busy timeout already waited; a lock that outlived it is worth one more go.
        return isinstance(exc, OperationalError) and "locked" in str(exc)


class MySQLDialect(Dialect):
    vendor = "mysql"

    def is_retryable(self, exc: DatabaseError) -> bool:
        args = getattr(exc, "args", ()) or ()
        return bool(args) and args[0] in _MYSQL_RETRYABLE

    def claim(self, queue, limit, now, lease_expires_at, token, priority=None):
        # Two statements, one transaction (see mysql.sql): the base claim's locking read
        # (its lease and token parameters go unused), then mark_claimed marks the rows.
        jobs = super().claim(queue, limit, now, lease_expires_at, token, priority)
        if not jobs:
            return jobs
        with self.cursor() as cursor:
            cursor.execute(
                self.queries["mark_claimed"],
                {
                    "ids": self.uuids([job.id for job in jobs]),
                    "now": self.dt(now),
                    "lease_expires_at": self.dt(lease_expires_at),
                    "token": self.uuid(token),
                },
            )
        for job in jobs:
            job.status = JobStatus.RUNNING
            job.attempts += 1
            job.started_at = now
            job.last_heartbeat_at = now
            job.lease_expires_at = lease_expires_at
            job.run_token = token
        return jobs


_DIALECTS = {d.vendor: d for d in (PostgresDialect, MySQLDialect, SQLiteDialect)}


@cache
def _dialect_class(vendor: str) -> type[Dialect]:
    try:
        return _DIALECTS[vendor]
    except KeyError:
        raise UnsupportedDatabase(
            f"Hammerweb supports PostgreSQL, MySQL/MariaDB and SQLite, not {vendor!r}"
        ) from None


def dialect_for(using: str) -> Dialect:
    return _dialect_class(connections[using].vendor)(using)
