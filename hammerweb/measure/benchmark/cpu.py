"""CPU seconds spent by a measurement's worker processes and by the database server.

The CPU a job says where a job's cost lies (the worker's Python or the server's statements)
and what it costs the machine, whatever the worker spent waiting: two workers that each wait
for the other's round trips can show the same rate at very different costs.

The worker's share is `resource`'s RUSAGE_CHILDREN: every child this process waited for,
and their children that they waited for (runworker's supervisor waits for its processes).
The server's share is read from /proc, so only for a server on this machine (a local
address or a socket); elsewhere it is None:
- PostgreSQL: the postmaster's own CPU, that of its children now alive, and that of the
  children it has already reaped (its cutime and cstime: backends that have exited);
- MariaDB/MySQL: the server process's CPU (all its threads);
- SQLite has no server: its work is the worker's.

Standard library only: `scripts/bench-peers` loads this file by path from the peers' own
venvs, which cannot import the project.
"""

from __future__ import annotations

import os
import resource

LOCAL_HOSTS = ("", "localhost", "127.0.0.1", "::1")


def children_cpu() -> float:
    """CPU seconds (user and system) of every child process waited for so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def is_local(host: str | None) -> bool:
    return host is None or host in LOCAL_HOSTS or host.startswith("/")


def postgres_cpu(backend_pid: int) -> float | None:
    """CPU seconds of the PostgreSQL server one of whose backends is `backend_pid` (from
    `SELECT pg_backend_pid()`), exited backends included; None if /proc does not show it."""
    backend = _stat(backend_pid)
    if backend is None:
        return None
    postmaster = backend["ppid"]
    main = _stat(postmaster)
    if main is None:
        return None
    total = main["utime"] + main["stime"] + main["cutime"] + main["cstime"]
    for pid in _pids():
        child = _stat(pid)
        if child is not None and child["ppid"] == postmaster:
            total += child["utime"] + child["stime"]
    return total / os.sysconf("SC_CLK_TCK")


def process_cpu(pid: int) -> float | None:
    """CPU seconds of one process, all its threads (a MariaDB server); None if not shown."""
    stat = _stat(pid)
    if stat is None:
        return None
    return (stat["utime"] + stat["stime"]) / os.sysconf("SC_CLK_TCK")


def _pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _stat(pid: int) -> dict | None:
    try:
        with open(f"/proc/{pid}/stat") as file:
            text = file.read()
    except OSError:  # gone, or no /proc here
        return None
    # The command name is in parentheses and may hold spaces: the fields follow its end.
    fields = text[text.rindex(")") + 2 :].split()
    return {
        "ppid": int(fields[1]),
        "utime": int(fields[11]),
        "stime": int(fields[12]),
        "cutime": int(fields[13]),
        "cstime": int(fields[14]),
    }
