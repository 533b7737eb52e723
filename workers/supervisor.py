"""`runworker --processes N`: N child worker processes, each a `runworker` of its own
(with its own `WorkerProcess` row); a child that dies is started again. Stop and force
are passed on to the children as SIGTERM (their first SIGTERM drains, the second forces).

Each child is started with an id of its own (its `WorkerProcess` id, stamped on its claims);
when a child ends, `on_exit` is told its id, pid and exit status, so that the jobs it held
are handed back at once (see lifeline.py).
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

logger = logging.getLogger("workers")
#: The least time between two starts of the same child, so that a child that cannot
#: start (a broken settings module, say) is not restarted in a tight loop.
RESTART_DELAY = 1.0
#: Tells a child its supervisor's pid, so that it drains and exits if the supervisor dies.
SUPERVISOR_ENV = "HAMMERWEB_SUPERVISOR_PID"
#: Tells a child the id its supervisor gave it.
PROCESS_ID_ENV = "HAMMERWEB_WORKER_PROCESS_ID"


def assigned_process_id() -> uuid.UUID:
    """In a child: the id its supervisor gave it; otherwise a new one."""
    given = os.environ.get(PROCESS_ID_ENV)
    return uuid.UUID(given) if given else uuid.uuid4()


def watch_supervisor(stop: threading.Event) -> None:
    """In a child: drain and exit once the supervisor is gone (then it is no longer our
    parent), rather than run on with nobody to stop it."""
    expected = os.environ.get(SUPERVISOR_ENV)
    if not expected:
        return

    def watch():
        while not stop.wait(0.5):
            if os.getppid() != int(expected):
                logger.warning("the supervisor (pid %s) is gone: draining", expected)
                stop.set()

    threading.Thread(target=watch, name="supervisor-watch", daemon=True).start()


class Supervisor:
    def __init__(
        self,
        child_args: list[str],
        processes: int,
        burst: bool,
        on_exit: Callable[[uuid.UUID, int, int], None] | None = None,
    ) -> None:
        self.command = [sys.executable, "-m", "django", "runworker", *child_args]
        self.processes = processes
        self.burst = burst
        self.cwd = Path(__file__).resolve().parent.parent
        self.on_exit = on_exit
        self.process_ids: dict[int, uuid.UUID] = {}

    def _spawn(self, index: int) -> subprocess.Popen:
        # A process group of its own: a Ctrl-C in the terminal reaches the supervisor
        # only, which passes it on once (a second one would force the child).
        self.process_ids[index] = process_id = uuid.uuid4()
        env = {**os.environ, SUPERVISOR_ENV: str(os.getpid()), PROCESS_ID_ENV: str(process_id)}
        child = subprocess.Popen(self.command, cwd=self.cwd, env=env, process_group=0)
        logger.info("started worker process %d (pid %d)", index, child.pid)
        return child

    def _ended(self, index: int, child: subprocess.Popen) -> None:
        if self.on_exit is not None:
            self.on_exit(self.process_ids[index], child.pid, child.returncode)

    def run(self, stop: threading.Event, force: threading.Event) -> int:
        children: dict[int, subprocess.Popen | None] = {}
        started: dict[int, float] = {}
        for index in range(self.processes):
            children[index] = self._spawn(index)
            started[index] = time.monotonic()
        signalled = 0
        failures = 0
        while any(child is not None for child in children.values()):
            wanted = 2 if force.is_set() else 1 if stop.is_set() else 0
            if wanted > signalled:
                for child in children.values():
                    if child is not None and child.poll() is None:
                        child.send_signal(signal.SIGTERM)
                signalled += 1
                continue
            for index, child in list(children.items()):
                if child is None or child.poll() is None:
                    continue
                code = child.returncode
                self._ended(index, child)
                if stop.is_set() or (self.burst and code == 0):
                    failures += code != 0
                    children[index] = None
                    continue
                logger.warning("worker process %d (pid %d) exited with %s; restarting",
                               index, child.pid, code)
                wait = started[index] + RESTART_DELAY - time.monotonic()
                if wait > 0 and stop.wait(wait):
                    children[index] = None
                    continue
                children[index] = self._spawn(index)
                started[index] = time.monotonic()
            stop.wait(0.1) if not stop.is_set() else force.wait(0.1)
        return 1 if force.is_set() or failures else 0
