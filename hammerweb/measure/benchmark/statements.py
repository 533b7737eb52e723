"""The statements a `runworker` child sends its database, for `benchqueue`'s statements a
hundred jobs. With `HAMMERWEB_MEASURE_STATEMENTS` naming a file in its environment, each of
the process's connections counts what it sends, and the process adds its total to that file
as it exits (a forked child starts from zero). Counted as the server sees them: every
execute (each parameter set of an `executemany`, but mysqlclient's one INSERT of many
rows, which it splits past 64 KiB: counted as one), and the transaction control the driver
sends on its own: psycopg's BEGIN and the COMMIT or ROLLBACK of a transaction it began,
SQLite's COMMIT (its BEGIN is an execute), mysqlclient's COMMIT and its `SET autocommit`.
A worker's hot path sends no executemany."""

from __future__ import annotations

import atexit
import itertools
import os
from pathlib import Path

from django.db.backends.signals import connection_created

ENVIRONMENT = "HAMMERWEB_MEASURE_STATEMENTS"
#: Set in a connection's `__dict__` once its statements are counted, and while it connects.
_MARK = "_hammerweb_statements_counted"
_CONNECTING = "_hammerweb_statements_connecting"

_counter = itertools.count()  # next() is atomic: the slots, claimer and writer count at once


def count(n: int = 1) -> None:
    for _ in range(n):
        next(_counter)


def counted() -> int:
    """The statements counted so far in this process (read once, at its exit)."""
    return next(_counter)


def install() -> None:
    """Count this process's statements and write their total to the file at exit, if the
    environment names one (in `runworker` children only: benchqueue sets it)."""
    path = os.environ.get(ENVIRONMENT)
    if not path:
        return
    connection_created.connect(_instrument, dispatch_uid="hammerweb.measure.statements")
    os.register_at_fork(after_in_child=_reset)
    atexit.register(_write, Path(path))


def total(path: Path) -> int | None:
    """The statements that every process wrote to `path`; None if none wrote (a process
    that did not exit by itself writes nothing)."""
    if not path.exists():
        return None
    lines = [line.split() for line in path.read_text().splitlines()]
    return sum(int(words[1]) for words in lines if len(words) == 2 and words[1].isdigit())


def _reset() -> None:
    global _counter
    _counter = itertools.count()


def _write(path: Path) -> None:
    # One short line a process, appended: the writes of sibling processes do not mix.
    with path.open("a") as file:
        file.write(f"{os.getpid()} {counted()}\n")


def _instrument(sender, connection, **kwargs) -> None:
    """Count the statements of `connection`, once however often it reconnects. Sent after
    the connection's set-up: the statements of a new connection's own set-up (Django's time
    zone, isolation level and autocommit) are not counted, at any reconnect either."""
    if connection.__dict__.get(_MARK):
        return
    connection.__dict__[_MARK] = True
    # First, not last: `execute_wrapper()` of a caller who opened the connection in its
    # block takes the last wrapper off at its end.
    connection.execute_wrappers.insert(0, _executed)
    vendor = connection.vendor
    commit, rollback = connection._commit, connection._rollback

    def ended(original):
        def end():
            count(_ending(connection, vendor))
            return original()

        return end

    connection._commit, connection._rollback = ended(commit), ended(rollback)
    connect = connection.connect

    def reconnect():
        connection.__dict__[_CONNECTING] = True  # its set-up is not counted
        try:
            return connect()
        finally:
            connection.__dict__[_CONNECTING] = False

    connection.connect = reconnect
    if vendor == "mysql":
        set_autocommit = connection._set_autocommit

        def switched(autocommit):
            if not connection.__dict__.get(_CONNECTING):
                count()  # mysqlclient sends SET autocommit
            return set_autocommit(autocommit)

        connection._set_autocommit = switched


def _ending(connection, vendor: str) -> int:
    """What ending the connection's transaction sends: nothing if none is open, else the
    COMMIT or ROLLBACK, and on PostgreSQL the BEGIN that psycopg sent before its first
    statement (not an execute of ours). A connection the driver finds closed: nothing."""
    raw = connection.connection
    if raw is None:
        return 0
    if vendor == "postgresql":
        from psycopg.pq import TransactionStatus

        status = raw.info.transaction_status
        return 2 if status in (TransactionStatus.INTRANS, TransactionStatus.INERROR) else 0
    if vendor == "sqlite":
        try:
            return 1 if raw.in_transaction else 0
        except Exception:  # closed under Django: its own call reports that
            return 0
    return 1


def _executed(execute, sql, params, many, context):
    connection = context["connection"]
    if not connection.__dict__.get(_CONNECTING):  # a reconnect's set-up is not counted
        count(_sent(connection.vendor, sql, params, many))
    return execute(sql, params, many, context)


def _sent(vendor: str, sql: str, params, many: bool) -> int:
    """The statements an execute sends: one, or one a parameter set of an `executemany`
    (an iterator's: counted as one) but mysqlclient's one INSERT of many rows."""
    if not many or _one_insert(vendor, sql):
        return 1
    try:
        return len(params)
    except TypeError:
        return 1


def _one_insert(vendor: str, sql: str) -> bool:
    """Whether the driver sends an `executemany` of `sql` as one statement: mysqlclient
    makes one INSERT of many rows of an INSERT ... VALUES."""
    if vendor != "mysql":
        return False
    from MySQLdb.cursors import RE_INSERT_VALUES

    return RE_INSERT_VALUES.match(sql) is not None
