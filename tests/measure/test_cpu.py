"""The CPU readings of `benchqueue`'s runworker figures: the worker's (its child processes)
and the database server's (from /proc, for a server on this machine). Each test makes real
work happen and checks that the reading moved by at least part of it."""

from __future__ import annotations

import subprocess
import sys

import pytest
from django.db import connection

from hammerweb.measure.benchmark import cpu
from hammerweb.measure.benchmark.runworker import server_cpu

pytestmark = pytest.mark.django_db

#: The server's work for `_busy_server`: long enough to be counted in clock ticks (10 ms).
_BUSY = {
    "postgresql": "SELECT count(*) FROM generate_series(1, 3000000)",
    "mysql": "SELECT BENCHMARK(3000000, MD5('hammerweb'))",
}


def _busy_server() -> None:
    with connection.cursor() as cursor:
        cursor.execute(_BUSY[connection.vendor])
        cursor.fetchall()


def test_children_cpu_counts_a_child_that_has_exited():
    before = cpu.children_cpu()
    subprocess.run([sys.executable, "-c", "sum(i * i for i in range(3_000_000))"], check=True)
    assert cpu.children_cpu() - before > 0.05


def test_server_cpu_counts_the_servers_work(vendor):
    if vendor == "sqlite":
        assert server_cpu("default") is None  # its work is the worker's own
        return
    before = server_cpu("default")
    assert before is not None  # the test databases run on this machine
    _busy_server()
    assert server_cpu("default") - before > 0.05


def test_postgres_cpu_keeps_the_cpu_of_backends_that_exited(vendor):
    """A backend that did the work and then exited: its CPU is still counted (the
    postmaster's reaped children), as the worker's connections are gone at a figure's end."""
    if vendor != "postgresql":
        pytest.skip("PostgreSQL's backends are processes of their own")
    before = server_cpu("default")
    settings = connection.settings_dict
    script = (
        "import psycopg\n"
        f"with psycopg.connect(host={settings['HOST']!r}, port={settings['PORT'] or 5432},"
        f" user={settings['USER']!r}, dbname={settings['NAME']!r}) as c:\n"
        f"    c.execute({_BUSY['postgresql']!r}).fetchall()\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True)
    assert server_cpu("default") - before > 0.05


@pytest.mark.parametrize(
    "host, local",
    [(None, True), ("", True), ("127.0.0.1", True), ("localhost", True), ("::1", True),
     ("/var/run/postgresql", True), ("db.example.com", False), ("10.0.0.5", False)],
)  # fmt: skip
def test_only_a_server_on_this_machine_is_read(host, local):
    assert cpu.is_local(host) is local


def test_a_process_that_is_gone_reads_as_none():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert cpu.process_cpu(child.pid) is None
    assert cpu.postgres_cpu(child.pid) is None
