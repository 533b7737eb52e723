"""What the handlers of every peer share: the run's settings (from the environment the driver
sets for the worker), the row the "sql" shape writes, and the pickup probe.

Stdlib only; imported by the peers' apps inside their worker processes.
"""

from __future__ import annotations

import functools
import json
import os
import socket
import time
from collections.abc import Awaitable, Callable

DSN_ENV = "PEERBENCH_DSN"
SHAPE_ENV = "PEERBENCH_SHAPE"
SETTINGS_ENV = "PEERBENCH_SETTINGS"
SOCKET_ENV = "PEERBENCH_SOCKET"

# The user's own table, in the same database as the peer's (as an app's models would be).
ROWS_TABLE = "bench_rows"
CREATE_ROWS = (
    f"CREATE TABLE IF NOT EXISTS {ROWS_TABLE} (id bigserial PRIMARY KEY, n integer NOT NULL)"
)


def dsn() -> str:
    return os.environ[DSN_ENV]


@functools.cache
def shape() -> str:
    return os.environ.get(SHAPE_ENV, "noop")


def settings() -> dict:
    return json.loads(os.environ.get(SETTINGS_ENV, "{}"))


def result(n: int) -> dict:
    return {"ok": True, "n": n}


_probe: socket.socket | None = None


def report_start(n: int) -> None:
    """The pickup handler's first line: tells the driver when job `n` started, on
    CLOCK_MONOTONIC (time.monotonic), which Linux keeps one for every process of the host,
    so the driver can subtract its own reading taken before the enqueue."""
    global _probe
    started = time.monotonic()
    if _probe is None:
        _probe = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    _probe.sendto(f"{n} {started!r}".encode(), os.environ[SOCKET_ENV])


async def handle(n: int, write_row: Callable[[int], Awaitable[None]]) -> object:
    """Every peer's handler body for job `n`; `write_row(n)` is the peer's own way to write
    the `sql` shape's row (its pool, its connector)."""
    current = shape()
    if current == "pickup":
        report_start(n)
    elif current == "dict":
        return result(n)
    elif current == "sql":
        await write_row(n)
    return None
