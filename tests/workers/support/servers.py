"""Restarting the shared database servers, for the few tests marked `dbrestart`: each
restart breaks every connection to the server, other test runs' too. Whatever happens, the
server is left running."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from django.db import connection

from tests.conftest import ROOT

START_DATABASES = ROOT / "scripts" / "start-databases"
MARIADB_PID = Path("/run/mysqld/mysqld.pid")


def restart_server() -> float:
    """Restart the server of the test database; the wall-clock time (time.time()) at which
    it answers again."""
    vendor = connection.vendor
    try:
        if vendor == "postgresql":
            _restart_postgresql()
        elif vendor == "mysql":
            _restart_mariadb()
        else:
            raise AssertionError(f"no server to restart for {vendor}")
        _wait_until_up()
        return time.time()
    finally:
        connection.close()  # ours died with the server
        subprocess.run([str(START_DATABASES)], check=True, timeout=120)  # leave it running


def _restart_postgresql() -> None:
    major = connection.cursor().connection.info.server_version // 10000
    subprocess.run(
        ["pg_ctlcluster", "--skip-systemctl-redirect", str(major), "main", "restart"],
        check=True,
        timeout=120,
    )


def _restart_mariadb() -> None:
    pid = int(MARIADB_PID.read_text().split()[0])
    subprocess.run(["mysqladmin", "-uroot", "-h127.0.0.1", "shutdown"], check=True, timeout=120)
    deadline = time.monotonic() + 120
    while _alive(pid):
        assert time.monotonic() < deadline, "mariadbd did not stop"
        time.sleep(0.05)
    subprocess.run(
        ["start-stop-daemon", "--start", "--oknodo", "--background"]
        + ["--exec", "/usr/sbin/mariadbd"],
        check=True,
        timeout=60,
    )


def _wait_until_up() -> None:
    deadline = time.monotonic() + 120
    while True:
        connection.close()
        try:
            connection.ensure_connection()
            return
        except Exception:
            assert time.monotonic() < deadline, "the server did not come back"
            time.sleep(0.05)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
