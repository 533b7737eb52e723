"""`runworker --metrics-port` and `--health-port`: small HTTP servers in daemon threads of
the worker process. Metrics: the default registry, behind `HAMMERWEB["METRICS_TOKEN"]`;
health: 200 while every worker run's vital threads live and the database answers, else
503. See docs/design/processes.md."""

from __future__ import annotations

import argparse
import contextlib
import logging
import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from django.db import connections
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest

from queues import conf
from queues.ops.health import database_problem
from queues.ops.metrics import token_allows

logger = logging.getLogger("workers")
TEXT = "text/plain; charset=utf-8"

#: What a server answers a GET with: (status, body, content type), given the headers.
Answer = Callable[[dict], tuple[int, bytes, str]]


def address(text: str) -> tuple[str, int]:
    """`PORT` (every interface) or `HOST:PORT`, for argparse."""
    host, _, port = text.rpartition(":")
    try:
        number = int(port)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port or HOST:PORT") from None
    if not 1 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"port {number} is not from 1 to 65535")
    return host.strip("[]"), number


class ProbeServer:
    def __init__(self, what: str, where: tuple[str, int], answer: Answer) -> None:
        self.what = what
        handler = type("Handler", (_Handler,), {"answer": staticmethod(answer)})
        # Raises OSError (the port is taken) here, before the worker starts.
        self.server = _server_class(where[0])(where, handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(
            target=self.server.serve_forever, name=f"{what}-server", daemon=True
        )

    def start(self) -> ProbeServer:
        self.thread.start()
        host, port = self.server.server_address[:2]
        logger.info("serving %s on %s:%s", self.what, host or "*", port)
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class _IPv6Server(ThreadingHTTPServer):
    address_family = socket.AF_INET6


class _DualStackServer(_IPv6Server):
    """Every interface, IPv4 and IPv6 on one socket (an IPv6-only cluster's probes reach
    it as well as an IPv4 one's), as `python -m http.server` does."""

    def server_bind(self):
        # Some systems default IPV6_V6ONLY to 1 (the BSDs, Linux with bindv6only set).
        with contextlib.suppress(OSError, AttributeError):
            self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        super().server_bind()


def _server_class(host: str) -> type[ThreadingHTTPServer]:
    """The server for `host`: its address family, as the resolver gives it first (a name
    such as localhost may be either); no host means every interface of both families where
    the machine has IPv6, else of IPv4."""
    if not host:
        return _DualStackServer if socket.has_dualstack_ipv6() else ThreadingHTTPServer
    try:
        family = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)[0][0]
    except socket.gaierror:
        return ThreadingHTTPServer  # binding it raises the OSError the caller reports
    return _IPv6Server if family == socket.AF_INET6 else ThreadingHTTPServer


class _Handler(BaseHTTPRequestHandler):
    answer: Answer

    def do_GET(self):
        try:
            status, body, kind = self.answer(dict(self.headers.items()))
        except Exception:  # a bug must answer 500, not drop the connection
            logger.exception("the %s answer failed", self.path)
            status, body, kind = 500, b"internal error\n", TEXT
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        if status == 401:
            self.send_header("WWW-Authenticate", 'Bearer realm="hammerweb metrics"')
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format, *args):  # not on stderr at each scrape
        logger.debug("%s %s", self.address_string(), format % args)


def metrics_answer(headers: dict) -> tuple[int, bytes, str]:
    lowered = {key.lower(): value for key, value in headers.items()}
    if conf.get("METRICS_TOKEN") and not token_allows(lowered.get("authorization")):
        return 401, b"Credentials needed.\n", TEXT
    return 200, generate_latest(REGISTRY), CONTENT_TYPE_LATEST


class ProcessHealth:
    """The health of a `WorkerProcessRuntime`'s workers and of its database."""

    def __init__(self, workers, using: str) -> None:
        self.workers = workers
        self.using = using

    def problems(self) -> list[str]:
        found = []
        for worker in self.workers:
            run = worker.current_run
            vital = run.vital if run is not None else {}
            if not vital:
                found.append(f"queue {worker.queue_name}: the worker has not started")
            elif run.state.stopping:  # its claimer drains the run: it claims no more
                found.append(f"queue {worker.queue_name}: the worker is stopping")
                continue
            for role, thread in vital.items():
                if not thread.is_alive():
                    found.append(f"queue {worker.queue_name}: the {role} thread has stopped")
        try:
            problem = database_problem(self.using)
        finally:
            connections[self.using].close()  # this request's thread ends: so does its link
        return found + ([problem] if problem else [])

    def answer(self, headers: dict) -> tuple[int, bytes, str]:
        problems = self.problems()
        if problems:
            return 503, ("\n".join(problems) + "\n").encode(), TEXT
        return 200, b"ok\n", TEXT
