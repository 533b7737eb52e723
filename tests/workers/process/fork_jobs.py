"""The handler of test_forking's `runworker` (`--include tests.workers.process.fork_jobs`),
and what the test reads back: each process's database connections as they are opened (the
process, the thread, the server's id of the connection), a line per job start, and a line
from an atexit hook. Imported in the supervisor, it opens a connection at import, which the
fork must not hand on; with HAMMERWEB_FORK_THREAD=1 it starts a thread at import, which
makes forking unsafe."""

from __future__ import annotations

import atexit
import os
import threading
import time
from pathlib import Path

from django.db import connection
from django.db.backends.signals import connection_created

from workers.api import job_handler

FORK_QUEUE = "fork_work"
#: Where the lines go, set by the test.
LOG_ENV = "HAMMERWEB_FORK_LOG"
THREAD_ENV = "HAMMERWEB_FORK_THREAD"
THREAD_NAME = "started-at-import"
SERVER_ID = {"postgresql": "SELECT pg_backend_pid()", "mysql": "SELECT CONNECTION_ID()"}


def note(line: str) -> None:
    # One short write in append mode: the processes' lines do not mix.
    with open(os.environ[LOG_ENV], "a") as log:
        log.write(line + "\n")


def on_connection(sender, connection, **kwargs) -> None:
    server_id = "-"
    if connection.vendor in SERVER_ID:
        with connection.cursor() as cursor:
            cursor.execute(SERVER_ID[connection.vendor])
            server_id = str(cursor.fetchone()[0])
    note(f"connection {os.getpid()} {threading.current_thread().name} {server_id}")


if os.environ.get(LOG_ENV):  # in the test's runworker, not where the test imports it
    connection_created.connect(on_connection, dispatch_uid="fork_jobs.on_connection")
    on_connection(None, connection)  # this thread's connection, open already or opened now
    if os.environ.get(THREAD_ENV) == "1":
        threading.Thread(target=threading.Event().wait, name=THREAD_NAME, daemon=True).start()
    atexit.register(lambda: note(f"atexit {os.getpid()}"))


@job_handler(FORK_QUEUE)
def work(job):
    note(f"start {os.getpid()} {job.id}")
    gate = job.payload.get("gate")
    while gate and not Path(gate).exists():
        time.sleep(0.02)
    return {"pid": os.getpid()}
