"""The database connections of the threads that run handlers: each job gets a usable one,
as Django's request cycle gives each request one (`close_old_connections()` after every job,
a cheap socket check before Django's health check), and `lost_database` tells a run the
database failed from one the handler failed. See docs/design/worker.md."""

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
