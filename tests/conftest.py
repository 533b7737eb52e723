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
