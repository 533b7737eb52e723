"""Scraping what a `runworker` the test started serves: a free port to give it, a GET with
urllib, the metrics parsed with prometheus_client's own parser."""

from __future__ import annotations

import os
import random
import socket
import time
import urllib.error
import urllib.request
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def free_ports(count: int) -> int:
    """The first of `count` consecutive free ports (a child i of `--processes N` serves on
    PORT+i). Drawn below the ephemeral range: there the ports next to a free one are taken
    by the client sockets of parallel test runs at any moment."""
    low, _high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    for _ in range(200):
        first = random.randrange(10000, low - count)
        socks = [socket.socket() for _ in range(count)]
        try:
            for offset, sock in enumerate(socks):
                sock.bind(("127.0.0.1", first + offset))
        except OSError:
            continue
        finally:
            for sock in socks:
                sock.close()
        return first
    raise AssertionError(f"no {count} consecutive free ports")


def get(
    port: int, path: str = "/", token: str | None = None, host: str = "127.0.0.1"
) -> tuple[int, str]:
    """(status, body) of a GET of `host` (an IPv6 address in brackets); no exception for a
    4xx or 5xx."""
    request = urllib.request.Request(f"http://{host}:{port}{path}")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def wait_for(port: int, status: int, timeout: float = 60, run=None, host: str = "127.0.0.1") -> str:
    """The body once a GET of `port` answers `status` (the server may not be up yet)."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = get(port, host=host)
        except OSError as exc:  # not listening yet
            last = (None, str(exc))
        if last[0] == status:
            return last[1]
        assert run is None or run.proc.poll() is None, f"runworker exited:\n{run.text()}"
        time.sleep(0.05)
    raise AssertionError(f"port {port} answered {last}, not {status}")


def samples(text: str) -> dict[tuple, float]:
    """{(sample name, ((label, value), ...)): value} of an exposition."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(parsed: dict, name: str, **labels) -> float | None:
    return parsed.get((name, tuple(sorted(labels.items()))))


def listener(port: int) -> int | None:
    """The pid of the process listening on 127.0.0.1:`port` (Linux: the socket's inode in
    /proc/net/tcp, then the process holding a descriptor on it)."""
    wanted = f"0100007F:{port:04X}"
    with open("/proc/net/tcp") as table:
        inodes = {
            fields[9]
            for fields in (line.split() for line in list(table)[1:])
            if fields[1] == wanted and fields[3] == "0A"  # 0A: LISTEN
        }
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith("socket:[") and target[8:-1] in inodes:
                    return int(pid)
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return None
