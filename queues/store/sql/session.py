"""What the engine sets up on its own connections and transactions, so that it behaves the
same whatever the project's DATABASES say: SQLite's transactions begin IMMEDIATE,
PostgreSQL's catalogue statements are prepared on server-binding cursors, and MySQL/MariaDB
must run READ COMMITTED. See docs/design/store.md."""

from __future__ import annotations

import sys
from contextlib import ExitStack, contextmanager
from functools import cache

from django.db import transaction
from django.db.backends.utils import CursorWrapper

from queues import conf

#: The isolation level the engine needs on MySQL/MariaDB (Django's name for it).
MYSQL_ISOLATION = "read committed"
#: What the engine's SQLite transactions begin with (EXCLUSIVE, if asked for, also holds it).
SQLITE_WRITE_MODES = ("IMMEDIATE", "EXCLUSIVE")


def atomic(connection):
    """`transaction.atomic` for the engine's own transactions on `connection`."""
    if connection.vendor == "sqlite" and not connection.in_atomic_block:
        return _immediate(connection)
    # Nested: a savepoint of the caller's transaction, which began as the caller chose.
    return transaction.atomic(using=connection.alias)


@contextmanager
def _immediate(connection):
    with ExitStack() as stack:
        # Connect first: connecting reads transaction_mode from OPTIONS again.
        connection.ensure_connection()
        mode = connection.transaction_mode
        if mode not in SQLITE_WRITE_MODES:
            connection.transaction_mode = "IMMEDIATE"
        try:
            # Entering the block runs BEGIN (Django keeps SQLite in autocommit and begins
            # explicitly), so the mode is only needed until then.
            stack.enter_context(transaction.atomic(using=connection.alias))
        finally:
            connection.transaction_mode = mode
        yield


def server_cursor(connection) -> CursorWrapper:
    """A PostgreSQL cursor for the catalogue's statements (with Django's error wrapping)."""
    connection.ensure_connection()
    raw = connection.connection
    prepare = bool(conf.get("PG_PREPARE"))
    if prepare and raw.prepare_threshold is None:
        # None turns preparing off for the whole connection, even on request. A threshold
        # never reached keeps it off for every cursor that does not ask (ours ask).
        raw.prepare_threshold = sys.maxsize
    return CursorWrapper(_cursor_class(prepare)(raw), connection)


@cache
def _cursor_class(prepare: bool):
    """A psycopg (server-binding) cursor that prepares each statement on its first run on
    the connection, or never, whatever the connection's prepare_threshold."""
    import psycopg

    class EngineCursor(psycopg.Cursor):
        __slots__ = ()

        def execute(self, query, params=None, *, prepare=prepare, binary=None):
            return super().execute(query, params, prepare=prepare, binary=binary)

    return EngineCursor
