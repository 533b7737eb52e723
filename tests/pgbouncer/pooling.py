"""Whether this run's database is reached through a pooler, for the tests that need one and
for those that need the server itself (LISTEN, a session's own state): those skip there."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from django.db import connection

from queues.store.sql.session import behind_a_pooler
from tests.conftest import ROOT
from tests.workers.support.servers import _alive

START_PGBOUNCER = ROOT / "scripts" / "start-pgbouncer"
#: Where scripts/start-pgbouncer keeps its pid file, unless PGBOUNCER_DIR says otherwise.
DEFAULT_DIR = "/tmp/hammerweb-pgbouncer"
#: The reason of the tests that need the server itself.
NEEDS_THE_SERVER = "needs PostgreSQL itself (LISTEN or a session's state), not a transaction pool"


def through_a_pooler() -> bool:
    """The test database is PostgreSQL behind a pooler (opens the connection)."""
    if connection.vendor != "postgresql":
        return False
    connection.ensure_connection()
    return behind_a_pooler(connection.connection)


def skip_through_a_pooler() -> None:
    """For a test that cannot pass through a transaction pool: it skips there."""
    if through_a_pooler():
        pytest.skip(NEEDS_THE_SERVER)


def restart_pgbouncer() -> float:
    """Stop PgBouncer at once (every client's connection breaks, as in a server restart)
    and start it again; the wall-clock time (time.time()) at which it answers again."""
    pidfile = Path(os.environ.get("PGBOUNCER_DIR", DEFAULT_DIR)) / "pgbouncer.pid"
    pid = int(pidfile.read_text())
    os.kill(pid, signal.SIGTERM)  # PgBouncer 1.18: immediate shutdown
    deadline = time.monotonic() + 30
    while _alive(pid):
        assert time.monotonic() < deadline, "pgbouncer did not stop"
        time.sleep(0.05)
    connection.close()  # ours went with it
    subprocess.run([str(START_PGBOUNCER)], check=True, timeout=60)
    return time.time()
