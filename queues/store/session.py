"""What the engine sets up on its own connections and transactions, so that it behaves the
same whatever the project's DATABASES say (Hammerweb is an app inside someone's project):

- SQLite: the engine's transactions begin IMMEDIATE. Its claims and outcomes read, then
  write; a DEFERRED transaction (Django's default) that must upgrade its read lock to a
  write lock while another connection writes fails at once with "database is locked",
  whatever the busy timeout. BEGIN IMMEDIATE takes the write lock first, so writers queue
  behind each other within the timeout instead.
- PostgreSQL: the catalogue's statements run on server-binding cursors and are prepared on
  each connection (`HAMMERWEB["PG_PREPARE"]`, on by default), so PostgreSQL plans each once
  per connection. Django's own cursors bind client-side and never prepare, and Django
  turns psycopg's automatic preparing off (`prepare_threshold` None) for the sake of
  poolers; the engine asks for its statements only, and leaves the others as they were.
- MySQL/MariaDB: READ COMMITTED (`MYSQL_ISOLATION`). Under REPEATABLE READ the claim's
  locking reads take gap locks that block enqueues and deadlock concurrent claims. Django's
  MySQL backend uses READ COMMITTED unless OPTIONS["isolation_level"] says otherwise; the
  engine cannot set the level per transaction without one more round trip for each of them,
  so a system check (queues.E011) refuses another level instead.
"""

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
