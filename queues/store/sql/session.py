"""What the engine sets up on its own connections and transactions, so that it behaves the
same whatever the project's DATABASES say: SQLite's transactions begin IMMEDIATE,
PostgreSQL's catalogue statements are prepared on server-binding cursors (unless a
transaction-mode pooler stands in between: `transaction_pooled`), and MySQL/MariaDB must run
READ COMMITTED. See docs/design/store.md."""

from __future__ import annotations

import logging
import sys
import threading
from contextlib import ExitStack, contextmanager
from functools import cache

from django.db import transaction
from django.db.backends.utils import CursorWrapper

from queues import conf
from queues.exceptions import TransactionPoolingError

logger = logging.getLogger("queues")

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
    prepare = conf.get("PG_PREPARE")
    if prepare is None:  # unset: wherever the server session is our own
        prepare = not transaction_pooled(connection)
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
            try:
                return super().execute(query, params, prepare=prepare, binary=binary)
            except (psycopg.errors.DuplicatePreparedStatement,
                    psycopg.errors.InvalidSqlStatementName) as exc:  # fmt: skip
                # Another client's statement on our server session, or ours on another's:
                # only a transaction-mode pooler the setting says is not there does that.
                raise TransactionPoolingError(_pooling_hint()) from exc

    return EngineCursor


def _pooling_hint() -> str:
    """The one line that says what to change when a transaction pool was not expected."""
    if conf.get("PG_PREPARE"):
        change = "HAMMERWEB['PG_PREPARE'] = False"  # asked for, where the pool cannot keep it
    else:
        change = "HAMMERWEB['PG_TRANSACTION_POOLING'] = True"
    return (
        "PostgreSQL's prepared statements are shared with other clients, as behind a "
        f"transaction-mode pooler (PgBouncer pool_mode = transaction): set {change}"
    )


#: Detections made, by server (host, port, database): a pooler does not come and go.
_detected: dict[tuple, bool] = {}
_detect_lock = threading.Lock()


def transaction_pooled(connection) -> bool:
    """Whether `connection` (PostgreSQL) reaches its server through a transaction-mode
    pooler, where a session's state (prepared statements, LISTEN) is not its own: as
    `HAMMERWEB["PG_TRANSACTION_POOLING"]` says, or, unset, as detected once per server."""
    declared = conf.get("PG_TRANSACTION_POOLING")
    if declared is not None:
        return declared
    params = connection.settings_dict
    key = (params.get("HOST"), params.get("PORT"), params.get("NAME"))
    if key not in _detected:
        connection.ensure_connection()
        with connection.wrap_database_errors:  # a DatabaseError, as the engine's own
            found = behind_a_pooler(connection.connection)
        with _detect_lock:
            if key not in _detected and found:
                logger.warning(
                    "PostgreSQL at %s:%s answers through a connection pooler: Hammerweb "
                    "prepares no statement and polls instead of LISTEN; set "
                    "HAMMERWEB['PG_TRANSACTION_POOLING'] = True to say so (False: a "
                    "session-mode pool or none, which keeps both)",
                    key[0] or "localhost",
                    key[1] or 5432,
                )
            _detected.setdefault(key, found)
    return _detected[key]


def behind_a_pooler(raw) -> bool:
    """A pooler hands its clients a process id of its own (the cancel key it answers
    for): the server's own process id differs from the one the connection was given."""
    with raw.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0] != raw.info.backend_pid
