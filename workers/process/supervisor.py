"""`runworker --processes N`: N child worker processes, each a `runworker` of its own with
an id of its own, forked from the set-up supervisor (`fork_child`) where that is safe, else
started as a new interpreter; a child that dies is started again, and its jobs are handed
back at once (`on_exit`). Stop and force reach the children as SIGTERM. A child that cannot
start ends the supervisor with its error (`CannotStart`). See docs/design/processes.md."""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
import uuid
from collections.abc import Callable

from workers.process.children import (
    PROCESS_ID_ENV,
    STARTED_FD_ENV,
    SUPERVISOR_ENV,
    CannotStart,
    ChildProcess,
    ForkedChild,
    child_command,
    child_environment,
)
from workers.process.forking import fork, fork_refused

logger = logging.getLogger("workers")
#: The least time between two starts of the same child, so that a child that dies soon
#: after it started is not restarted in a tight loop.
RESTART_DELAY = 1.0


class Supervisor:
    def __init__(
        self,
        child_args: list[str],
        processes: int,
        burst: bool,
        on_exit: Callable[[uuid.UUID, int, int], None] | None = None,
        own_args: Callable[[int], list[str]] | None = None,
        fork_child: Callable[[int], int] | None = None,
    ) -> None:
        self.command = child_command(child_args)
        self.own_args = own_args  # the arguments of child `index` alone (its ports)
        #: What a forked child `index` runs (its exit code); None: every child is spawned.
        self.fork_child = fork_child
        self.processes = processes
        self.burst = burst
        self.on_exit = on_exit
        self.process_ids: dict[int, uuid.UUID] = {}
        self.children: dict[int, ChildProcess | ForkedChild | None] = {}
        self.spawn_told = False

    def _start(self, index: int) -> ChildProcess | ForkedChild:
        self.process_ids[index] = process_id = uuid.uuid4()
        read_fd, write_fd = os.pipe()
        extra = {
            SUPERVISOR_ENV: str(os.getpid()),
            PROCESS_ID_ENV: str(process_id),
            STARTED_FD_ENV: str(write_fd),
        }
        refused = fork_refused() if self.fork_child else "asked for"
        if refused is None:
            return self._fork(index, read_fd, write_fd, extra)
        if self.fork_child and not self.spawn_told:
            logger.info("worker processes start as new interpreters: %s", refused)
            self.spawn_told = True
        env = child_environment(extra)
        try:
            # A process group of its own: a Ctrl-C in the terminal reaches the supervisor
            # only, which passes it on once (a second one would force the child).
            own = self.own_args(index) if self.own_args else []
            child = ChildProcess(
                [*self.command, *own], read_fd, env=env, pass_fds=(write_fd,), process_group=0
            )
        except BaseException:
            os.close(read_fd)
            raise
        finally:
            os.close(write_fd)
        logger.info("started worker process %d (pid %d)", index, child.pid)
        return child

    def _fork(self, index: int, read_fd: int, write_fd: int, extra: dict) -> ForkedChild:
        def main() -> int:
            for child in self.children.values():  # the siblings' pipes are not this one's
                if child is not None and child.started_fd is not None:
                    os.close(child.started_fd)
            os.close(read_fd)
            os.environ.update(extra)
            return self.fork_child(index)

        try:
            pid = fork(main, own_group=True)
        except BaseException:
            os.close(read_fd)
            raise
        finally:
            os.close(write_fd)
        logger.info("started worker process %d (pid %d, forked)", index, pid)
        return ForkedChild(pid, read_fd)

    def _ended(self, index: int, child: ChildProcess | ForkedChild) -> None:
        if self.on_exit is not None:
            self.on_exit(self.process_ids[index], child.pid, child.returncode)

    def run(self, stop: threading.Event, force: threading.Event) -> int:
        self.children = children = {}
        started: dict[int, float] = {}
        for index in range(self.processes):
            children[index] = self._start(index)
            started[index] = time.monotonic()
        signalled = 0
        failures = 0
        cannot_start: str | None = None
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
                if not stop.is_set() and not child.started():
                    # It would fail the same way again: the others drain, then we give up.
                    cannot_start = cannot_start or _start_error(index, child)
                    logger.error("%s; stopping", cannot_start)
                    stop.set()
                    children[index] = None
                    continue
                if stop.is_set() or (self.burst and code == 0):
                    failures += code != 0
                    children[index] = None
                    continue
                logger.warning(
                    "worker process %d (pid %d) exited with %s; restarting", index, child.pid, code
                )
                wait = started[index] + RESTART_DELAY - time.monotonic()
                if wait > 0 and stop.wait(wait):
                    children[index] = None
                    continue
                children[index] = self._start(index)
                started[index] = time.monotonic()
            stop.wait(0.1) if not stop.is_set() else force.wait(0.1)
        if cannot_start:
            raise CannotStart(cannot_start)
        return 1 if force.is_set() or failures else 0


def _start_error(index: int, child: ChildProcess) -> str:
    return (
        f"worker process {index} (pid {child.pid}) could not start (exit code "
        f"{child.returncode}): {child.error()}"
    )
