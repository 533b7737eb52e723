"""The supervisor's lifeline: when a child worker process ends, the jobs it still had
Running are handed back at once (`queues.ops.maintenance.Lifeline`), not after their
leases, each hand-back in a process forked for it (the supervisor forks its workers: it
runs no thread) or, where forking is refused, in a thread; either retries until the
database is back. See docs/design/processes.md."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import threading
import time
import uuid

from queues.api import JobQueue
from queues.ops.maintenance import Lifeline
from workers.process.children import SUPERVISOR_ENV, watch_supervisor
from workers.process.forking import fork, fork_refused
from workers.runtime.faults import GaveUp, close_connection, retrying

logger = logging.getLogger("workers")


def death_error(pid: int, code: int) -> str:
    """The error of a job whose process `pid` ended with `code` (Popen's returncode)."""
    who = f"{socket.gethostname()}:{pid}"
    if code < 0:
        try:
            how = f"killed by {signal.Signals(-code).name}"
        except ValueError:
            how = f"killed by signal {-code}"
        return f"The worker process {who} died ({how}) while the job was Running"
    if code:
        return f"The worker process {who} died (exit code {code}) while the job was Running"
    return f"The worker process {who} exited while the job was Running"


class ChildLifeline:
    def __init__(self, using: str, force: threading.Event) -> None:
        self.using = using
        self.force = force
        ran_by = f"supervisor:{socket.gethostname()}:{os.getpid()}"
        self.lifeline = Lifeline(JobQueue(using=using), ran_by=ran_by)
        self.threads: list[threading.Thread] = []
        self.pids: list[int] = []  # the hand-backs forked and not yet waited for

    def child_ended(self, process_id: uuid.UUID, pid: int, code: int) -> None:
        self._reap()
        if fork_refused() is None:
            hand_back = lambda: self._forked(process_id, pid, code)  # noqa: E731
            self.pids.append(fork(hand_back, own_group=False, on_stop=signal.SIG_IGN))
            return
        thread = threading.Thread(
            target=self._hand_back,
            args=(process_id, pid, code),
            name=f"lifeline-{pid}",
            daemon=True,
        )
        thread.start()
        self.threads = [t for t in self.threads if t.is_alive()] + [thread]

    def _forked(self, process_id: uuid.UUID, pid: int, code: int) -> int:
        """The hand-back, in a process forked for it. The supervisor alone decides when it
        ends (SIGKILL on force or past its patience): the group's Ctrl-C or SIGTERM is not
        for it. It gives up when the supervisor is gone."""
        self.force = threading.Event()
        os.environ[SUPERVISOR_ENV] = str(os.getppid())
        watch_supervisor(self.force)
        self._hand_back(process_id, pid, code)
        return 0

    def _reap(self) -> None:
        self.pids = [pid for pid in self.pids if not os.waitpid(pid, os.WNOHANG)[0]]

    def _hand_back(self, process_id: uuid.UUID, pid: int, code: int) -> None:
        error = death_error(pid, code)
        try:
            recovery = retrying(
                lambda: self.lifeline.hand_back(process_id, error),
                what=f"handing back the jobs of worker process {pid}",
                using=self.using,
                give_up=self.force,
            )
        except GaveUp:
            return  # their leases expire: the reaper takes them back
        except Exception:
            logger.exception("handing back the jobs of worker process %d failed", pid)
            return
        finally:
            close_connection(self.using)
        if recovery.requeued or recovery.dead:
            logger.warning(
                "worker process %d ended with %s: %d of its jobs handed back, %d dead",
                pid,
                code,
                len(recovery.requeued),
                len(recovery.dead),
            )

    def wait(self, timeout: float) -> None:
        """Wait up to `timeout` seconds (or until forced) for the hand-backs under way."""
        deadline = time.monotonic() + timeout
        try:
            for thread in self.threads:
                while thread.is_alive() and not self.force.is_set():
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return
                    thread.join(min(left, 0.1))
            self._reap()
            while self.pids and not self.force.wait(0.02) and time.monotonic() < deadline:
                self._reap()
        finally:
            # What is left of them goes: those jobs come back when their leases expire.
            for pid in self.pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            self.pids = []
