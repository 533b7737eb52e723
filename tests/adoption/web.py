"""A browser's part, by hand: a server process of the fresh project, a logged-in session
(cookies, the admin's login form, CSRF) and the first message of a WebSocket."""

from __future__ import annotations

import base64
import http.cookiejar
import os
import re
import socket
import urllib.parse
import urllib.request
from contextlib import contextmanager

from tests.adoption.conftest import PASSWORD
from tests.conftest import free_port, wait_for_server

#: Every attribute of the pages that holds a URL.
URL_ATTRIBUTES = re.compile(r'\b(href|src|action|hx-get|hx-post|ws-connect)="([^"]*)"')


@contextmanager
def serving(project, log, *args):
    """`manage.py runserver` (daphne's: ASGI; with --noasgi Django's WSGI one) on a free
    port; yields its base URL."""
    port = free_port()
    server = project.start("runserver", f"127.0.0.1:{port}", "--noreload", *args, log=log)
    try:
        wait_for_server(server, port, log, 60)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(30)


class Session:
    """A staff user's browser: cookies kept, redirects followed."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.cookies = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.cookies))

    def get(self, path: str):
        with self.opener.open(self.base + path, timeout=30) as response:
            return response.geturl(), response.status, response.headers, response.read().decode()

    def post(self, path: str, data: dict, headers: dict | None = None):
        request = urllib.request.Request(
            self.base + path, data=urllib.parse.urlencode(data).encode(), headers=headers or {}
        )
        with self.opener.open(request, timeout=30) as response:
            return response.geturl(), response.status, response.read().decode()

    def cookie(self, name: str) -> str:
        return next(c.value for c in self.cookies if c.name == name)

    def header(self) -> str:
        return "; ".join(f"{c.name}={c.value}" for c in self.cookies)

    def log_in(self, page: str) -> str:
        """Open `page`, be sent to the admin's login, log in; returns the page's HTML."""
        url, _, _, html = self.get(page)
        login = urllib.parse.urlsplit(url)
        assert login.path == "/admin/login/", url
        assert urllib.parse.parse_qs(login.query)["next"] == [page]
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)[1]
        url, status, html = self.post(
            f"{login.path}?{login.query}",
            {"username": "staff", "password": PASSWORD, "csrfmiddlewaretoken": token,
             "next": page},
        )
        assert (urllib.parse.urlsplit(url).path, status) == (page, 200), url
        return html


def first_message(base: str, path: str, cookie: str, timeout: float = 30) -> str:
    """Open a WebSocket at `path` with the session's cookie and the page's Origin, and
    return the first text message the server sends."""
    host, port = urllib.parse.urlsplit(base).netloc.split(":")
    key = base64.b64encode(os.urandom(16)).decode()
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        sock.sendall(
            (
                f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
                f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                f"Sec-WebSocket-Version: 13\r\nOrigin: {base}\r\nCookie: {cookie}\r\n\r\n"
            ).encode()
        )
        stream = sock.makefile("rb")
        status = stream.readline()
        assert b" 101 " in status, status
        while stream.readline() not in (b"\r\n", b""):
            pass
        while True:  # frames from the server are not masked
            head = stream.read(2)
            opcode, length = head[0] & 0x0F, head[1] & 0x7F
            if length >= 126:
                length = int.from_bytes(stream.read(2 if length == 126 else 8), "big")
            payload = stream.read(length)
            if opcode == 1:
                return payload.decode()
            assert opcode != 8, f"the socket was closed: {payload!r}"
