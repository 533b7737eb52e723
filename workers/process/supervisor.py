"""`runworker --processes N`: N child worker processes, each a `runworker` of its own with
an id of its own; a child that dies is started again, and its jobs are handed back at once
(`on_exit`). Stop and force reach the children as SIGTERM. A child that cannot start ends
the supervisor with its error (`CannotStart`). See docs/design/processes.md."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable

logger = logging.getLogger("workers")
#: The least time between two starts of the same child, so that a child that dies soon
#: after it started is not restarted in a tight loop.
RESTART_DELAY = 1.0
#: Tells a child its supervisor's pid, so that it drains and exits if the supervisor dies.
SUPERVISOR_ENV = "HAMMERWEB_SUPERVISOR_PID"
#: Tells a child the id its supervisor gave it.
PROCESS_ID_ENV = "HAMMERWEB_WORKER_PROCESS_ID"


def assigned_process_id() -> uuid.UUID:
    """In a child: the id its supervisor gave it; otherwise a new one."""
    given = os.environ.get(PROCESS_ID_ENV)
    return uuid.UUID(given) if given else uuid.uuid4()
#: The file descriptor a child writes to once it has started.
STARTED_FD_ENV = "HAMMERWEB_STARTED_FD"
#: How many of a child's last stderr lines are kept for the error of a child that cannot start.
ERROR_LINES = 30


class CannotStart(Exception):
    """A child worker process exited before it started; the message is its error."""


def report_started() -> None:
    """In a child: tell the supervisor that this process has started (it has its settings,
    apps, handlers and database alias). Does nothing outside a supervisor."""
    fd = os.environ.pop(STARTED_FD_ENV, None)
    if fd is not None:
        os.write(int(fd), b"1")
        os.close(int(fd))


def child_command(child_args: list[str]) -> list[str]:
    """The parent's interpreter running `django runworker`. `-P`: sys.path comes from
    PYTHONPATH alone (child_environment), without the working directory put in front."""
    return [sys.executable, "-P", "-m", "django", "runworker", *child_args]


def child_environment(extra: dict[str, str]) -> dict[str, str]:
    """The parent's environment, with its settings module (however it was given: the
    environment, `--settings`) and its sys.path (`--pythonpath`, the project's folder that
    `manage.py` put first)."""
    from django.conf import settings

    module = settings.SETTINGS_MODULE
    if not module:
        raise CannotStart(
            "runworker --processes needs a settings module: settings configured in code "
            "(settings.configure()) cannot be passed on to child processes"
        )
    path = [entry or os.getcwd() for entry in sys.path if isinstance(entry, str)]
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": module,
        "PYTHONPATH": os.pathsep.join(path),
        **extra,
    }


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


class ChildProcess(subprocess.Popen):
    """A child worker process, with the pipe it reports its start on and the last lines of
    its stderr (which is passed on to the supervisor's as it comes)."""

    def __init__(self, command: list[str], started_fd: int, **kwargs) -> None:
        super().__init__(command, stderr=subprocess.PIPE, **kwargs)
        self.started_fd: int | None = started_fd
        self.has_started = False
        self.tail: deque[str] = deque(maxlen=ERROR_LINES)
        self.relay = threading.Thread(target=self._relay, name="stderr-relay", daemon=True)
        self.relay.start()

    def _relay(self) -> None:
        for raw in self.stderr:
            line = raw.decode(errors="replace")
            self.tail.append(line)
            sys.stderr.write(line)
            sys.stderr.flush()

    def started(self) -> bool:
        """Whether it reported its start (once it has exited, the pipe tells for sure)."""
        if self.started_fd is not None and not self.has_started:
            os.set_blocking(self.started_fd, False)
            try:
                self.has_started = os.read(self.started_fd, 1) == b"1"
            except BlockingIOError:
                return False  # still starting
            if self.has_started or self.poll() is not None:
                os.close(self.started_fd)
                self.started_fd = None
        return self.has_started

    def error(self) -> str:
        """The last line it wrote to stderr (a traceback ends with the exception)."""
        self.relay.join(5)
        lines = [line.strip() for line in self.tail if line.strip()]
        return lines[-1] if lines else "no error output"


class Supervisor:
    def __init__(
        self,
        child_args: list[str],
        processes: int,
        burst: bool,
        on_exit: Callable[[uuid.UUID, int, int], None] | None = None,
        own_args: Callable[[int], list[str]] | None = None,
    ) -> None:
        self.command = child_command(child_args)
        self.own_args = own_args  # the arguments of child `index` alone (its ports)
        self.processes = processes
        self.burst = burst
        self.on_exit = on_exit
        self.process_ids: dict[int, uuid.UUID] = {}

    def _spawn(self, index: int) -> ChildProcess:
        self.process_ids[index] = process_id = uuid.uuid4()
        read_fd, write_fd = os.pipe()
        env = child_environment({
            SUPERVISOR_ENV: str(os.getpid()),
            PROCESS_ID_ENV: str(process_id),
            STARTED_FD_ENV: str(write_fd),
        })
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

    def _ended(self, index: int, child: subprocess.Popen) -> None:
        if self.on_exit is not None:
            self.on_exit(self.process_ids[index], child.pid, child.returncode)

    def run(self, stop: threading.Event, force: threading.Event) -> int:
        children: dict[int, ChildProcess | None] = {}
        started: dict[int, float] = {}
        for index in range(self.processes):
            children[index] = self._spawn(index)
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
                logger.warning("worker process %d (pid %d) exited with %s; restarting",
                               index, child.pid, code)
                wait = started[index] + RESTART_DELAY - time.monotonic()
                if wait > 0 and stop.wait(wait):
                    children[index] = None
                    continue
                children[index] = self._spawn(index)
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
