"""A child worker process of `runworker --processes N`, from both sides: what the child is
told through its environment (its supervisor, its id, the pipe it reports its start on),
how a spawned child is started, and the handles the supervisor keeps of a child, forked
(`ForkedChild`) or spawned (`ChildProcess`). See docs/design/processes.md."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import uuid
from collections import deque

logger = logging.getLogger("workers")
#: Tells a child its supervisor's pid, so that it drains and exits if the supervisor dies.
SUPERVISOR_ENV = "HAMMERWEB_SUPERVISOR_PID"
#: Tells a child the id its supervisor gave it.
PROCESS_ID_ENV = "HAMMERWEB_WORKER_PROCESS_ID"
#: The file descriptor a child writes to once it has started.
STARTED_FD_ENV = "HAMMERWEB_STARTED_FD"
#: How many of a child's last stderr lines are kept for the error of a child that cannot start.
ERROR_LINES = 30


class CannotStart(Exception):
    """A child worker process exited before it started; the message is its error."""


def assigned_process_id() -> uuid.UUID:
    """In a child: the id its supervisor gave it; otherwise a new one."""
    given = os.environ.get(PROCESS_ID_ENV)
    return uuid.UUID(given) if given else uuid.uuid4()


def report_started() -> None:
    """In a child: tell the supervisor that this process has started (it has its settings,
    apps, handlers and database alias). Does nothing outside a supervisor."""
    _report(b"1")


def report_failed(error: str) -> None:
    """In a forked child that could not start: tell the supervisor why (its stderr is the
    supervisor's own, not read back)."""
    _report(b"0" + error.encode(errors="replace"))


def _report(message: bytes) -> None:
    fd = os.environ.pop(STARTED_FD_ENV, None)
    if fd is not None:
        os.write(int(fd), message)
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


class StartPipe:
    """The pipe a child reports on: "1" once it has started, or "0" and why it could not."""

    started_fd: int | None
    has_started = False
    report = b""

    def started(self) -> bool:
        """Whether it reported its start (once it has exited, the pipe tells for sure)."""
        fd = self.started_fd
        if fd is None or self.has_started:
            return self.has_started
        os.set_blocking(fd, False)
        try:
            while chunk := os.read(fd, 4096):
                self.report += chunk
        except BlockingIOError:
            if self.report[:1] != b"1":
                return False  # still starting
        self.has_started = self.report[:1] == b"1"
        os.close(fd)
        self.started_fd = None
        return self.has_started

    def reported_error(self) -> str:
        return self.report[1:].decode(errors="replace").strip()


class ForkedChild(StartPipe):
    """A child worker process forked from this one, with the few of Popen's methods that
    the supervisor uses."""

    def __init__(self, pid: int, started_fd: int) -> None:
        self.pid = pid
        self.started_fd = started_fd
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def send_signal(self, signum: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, signum)

    def error(self) -> str:
        self.started()
        return self.reported_error() or "no error output"


class ChildProcess(StartPipe, subprocess.Popen):
    """A child worker process started as a new interpreter, with the pipe it reports its
    start on and the last lines of its stderr (passed on to the supervisor's as it comes)."""

    def __init__(self, command: list[str], started_fd: int, **kwargs) -> None:
        super().__init__(command, stderr=subprocess.PIPE, **kwargs)
        self.started_fd = started_fd
        self.tail: deque[str] = deque(maxlen=ERROR_LINES)
        self.relay = threading.Thread(target=self._relay, name="stderr-relay", daemon=True)
        self.relay.start()

    def _relay(self) -> None:
        for raw in self.stderr:
            line = raw.decode(errors="replace")
            self.tail.append(line)
            sys.stderr.write(line)
            sys.stderr.flush()

    def error(self) -> str:
        """The last line it wrote to stderr (a traceback ends with the exception)."""
        self.relay.join(5)
        lines = [line.strip() for line in self.tail if line.strip()]
        return lines[-1] if lines else "no error output"
