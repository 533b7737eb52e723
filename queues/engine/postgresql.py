"""PostgreSQL: the catalogue's statements on server-binding cursors (prepared by psycopg), the
strict claim in autocommit, and which errors are worth a retry."""

from __future__ import annotations

from django.db import DatabaseError
from django.db.backends.utils import CursorWrapper

from .sql import SqlStore

# Deadlock, serialization failure, lock not available.
_RETRYABLE = {"40P01", "40001", "55P03"}


class PostgresStore(SqlStore):
    vendor = "postgresql"
    claim_is_one_statement = True

    def cursor(self):
        # Django's cursors bind parameters client-side, so every execution is parsed and
        # planned anew. The catalogue's statements are few and run thousands of times a
        # second, so they get a server-binding cursor: with the connection's
        # `prepare_threshold` set (OPTIONS; Django leaves it off for the sake of
        # transaction-mode poolers) psycopg prepares each after a few runs. Wrapped in
        # Django's CursorWrapper: the same error translation and broken-transaction checks.
        import psycopg

        connection = self.connection
        connection.ensure_connection()
        return CursorWrapper(psycopg.Cursor(connection.connection), connection)

    def is_retryable(self, exc: DatabaseError) -> bool:
        return getattr(exc.__cause__, "sqlstate", None) in _RETRYABLE
