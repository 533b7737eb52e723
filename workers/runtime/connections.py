"""The database connections of the threads that run handlers. Each job gets a usable one, as
Django's request cycle gives each request one: `close_old_connections()` after every job of a
thread (so before its next one), whatever the job did, closes a connection that is broken,
has outlived CONN_MAX_AGE or was left in a transaction, and re-arms the health check
(CONN_HEALTH_CHECKS) that the connection's next use runs. A thread with no connection open
(a handler that does not use the database) pays one look-up.

Django's health check is a round trip (`SELECT 1` on PostgreSQL, a ping on MySQL) before the
first query of each job: for a handler that writes one row, as long as the write itself
(measured: docs/benchmarks.md). `before_job` does a cheaper check first. A session that the
server ended (a restart, a terminated backend, a killed connection, a crashed server) leaves
its socket readable: the server's last message, or the end of the stream. An idle
connection in autocommit expects nothing from the server, so a socket with nothing to read
passes, and a readable one gets Django's full check. What neither check can see, a network
path gone silent, makes a `SELECT 1` hang as long as the handler's own query would.

A run that fails only because the database went away is not the job's fault: `lost_database`
tells such a failure from one of the handler's own (see `Interrupted` in executor.py).
"""

from __future__ import annotations

import select
import threading

from django.db import connections

from workers.runtime.faults import DB_FAULTS

__all__ = ["after_job", "before_job", "close_all", "lost_database"]

# The connections `after_job` last re-armed, per thread: the ones `before_job` looks at.
# Asking Django for this thread's open connections again was 5% of a dict-returning job's
# Python time in `runworker` (measured with py-spy --gil).
_rearmed = threading.local()


def after_job() -> None:
    """Django's `close_old_connections()`, remembering which connections it kept."""
    kept = connections.all(initialized_only=True)
    for conn in kept:
        conn.close_if_unusable_or_obsolete()
    _rearmed.connections = kept


def before_job() -> None:
    """This thread's connections whose health check is due (CONN_HEALTH_CHECKS, re-armed by
    `after_job`) pass it without a round trip if the server has sent them nothing."""
    for conn in getattr(_rearmed, "connections", ()):
        due = conn.connection is not None and conn.health_check_enabled
        if due and not conn.health_check_done and _quiet(conn.connection):
            conn.health_check_done = True


def _quiet(raw) -> bool:
    """Whether the socket of `raw` (a DB-API connection) has nothing to read. psycopg and
    mysqlclient both give their socket's `fileno()`; another driver's, or a platform with
    no poll(), is left to Django's check."""
    try:
        fd = raw.fileno()
        poller = select.poll()
    except (AttributeError, OSError, ValueError):
        return False
    poller.register(fd, select.POLLIN | select.POLLPRI)
    return not poller.poll(0)


def close_all() -> None:
    """Close this thread's connections (a thread that runs handlers, at its end)."""
    connections.close_all()


def lost_database(exc: BaseException) -> bool:
    """Whether the handler's `exc` comes from a lost database: a connection fault
    (OperationalError, InterfaceError) in its chain of causes, and a connection of this
    thread that could not connect or no longer answers. A fault on a connection that still
    answers (a deadlock, a statement timeout, MySQL's error for an unknown column) is the
    job's own, and so is any other error."""
    if not _caused_by_a_fault(exc):
        return False
    for conn in connections.all(initialized_only=True):
        # `errors_occurred`: Django marks a connection whose query (or connect) raised
        # anything but a DataError or IntegrityError; a connection None after that could
        # not connect, or was closed because it broke.
        if conn.errors_occurred and (conn.connection is None or not conn.is_usable()):
            return True
    return False


def _caused_by_a_fault(exc: BaseException) -> bool:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, DB_FAULTS):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False
