"""Shared fixtures. The database is the one DATABASE_URL names (SQLite by default); `make test`
runs the suite once per database."""

from __future__ import annotations

import itertools
import os
import socket
import time
import uuid
from pathlib import Path

import pytest
from django.db import connection

#: The repository's root: where manage.py, scripts/ and the apps are.
ROOT = Path(__file__).resolve().parent.parent

_counter = itertools.count()


def unique_queue(prefix: str) -> str:
    return f"{prefix}_{os.getpid()}_{next(_counter)}_{uuid.uuid4().hex[:6]}"


@pytest.fixture
def vendor() -> str:
    return connection.vendor


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for_server(server, port: int, log, timeout: float) -> None:
    """Until the server process `server` accepts connections on `port` (its output in
    `log` if it dies or takes longer than `timeout` seconds)."""
    deadline = time.monotonic() + timeout
    while True:
        assert server.poll() is None, log.read_text()
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)


def _drop_test_database_through_a_pooler() -> None:
    """Behind a pooler (PgBouncer), the pool still holds server sessions on the test
    database when the tests end, and Django's DROP DATABASE fails on them: there, FORCE
    ends them (PostgreSQL 13+). A direct connection drops as Django does."""
    from django.db.backends.postgresql.creation import DatabaseCreation

    from queues.store.sql.session import behind_a_pooler

    def destroy(self, test_database_name, verbosity):
        self.connection.close_pool()
        with self._nodb_cursor() as cursor:
            force = " WITH (FORCE)" if behind_a_pooler(cursor.connection) else ""
            name = self.connection.ops.quote_name(test_database_name)
            cursor.execute(f"DROP DATABASE {name}{force}")

    DatabaseCreation._destroy_test_db = destroy


if connection.vendor == "postgresql":
    _drop_test_database_through_a_pooler()
