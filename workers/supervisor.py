"""`runworker --processes N`: N child worker processes, each a `runworker` of its own
(with its own `WorkerProcess` row); a child that dies is started again. Stop and force
are passed on to the children as SIGTERM (their first SIGTERM drains, the second forces)."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

logger = logging.getLogger("workers")
#: The least time between two starts of the same child, so that a child that cannot
#: start (a broken settings module, say) is not restarted in a tight loop.
RESTART_DELAY = 1.0


class Supervisor:
    def __init__(self, child_args: list[str], processes: int, burst: bool) -> None:
        self.command = [sys.executable, "-m", "django", "runworker", *child_args]
        self.processes = processes
        self.burst = burst
        self.cwd = Path(__file__).resolve().parent.parent

    def _spawn(self, index: int) -> subprocess.Popen:
        # A process group of its own: a Ctrl-C in the terminal reaches the supervisor
        # only, which passes it on once (a second one would force the child).
        child = subprocess.Popen(self.command, cwd=self.cwd, env=os.environ.copy(), process_group=0)
        logger.info("started worker process %d (pid %d)", index, child.pid)
        return child

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
