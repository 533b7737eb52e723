"""Fork after set-up, and the exit without a teardown. `runworker --processes N` sets Django
up once, in the supervisor, and forks its children (and the lifeline's hand-backs) from it
instead of starting N interpreters that import and set up everything again. A fork is safe
only from a process that runs one thread and holds no database connection: `fork_refused`
says why not, and the supervisor then starts a new interpreter instead. A process whose
work ended cleanly leaves with `exit_now`. See docs/design/processes.md."""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable
from typing import NoReturn

from django.db import connections

STOPS = (signal.SIGTERM, signal.SIGINT)


def fork_refused() -> str | None:
    """Why this process must not fork a worker process now; None if it may."""
    if not hasattr(os, "fork"):
        return "this platform cannot fork"
    if sys.platform == "darwin":
        # Python starts multiprocessing's children anew there too: the system's frameworks
        # may hold state a fork copies half-made.
        return "macOS's system libraries are not safe to fork"
    others = [t.name for t in threading.enumerate() if t is not threading.current_thread()]
    if others:
        # A lock another thread holds would stay held for ever in the child, and its
        # database connections would be closed under the parent's feet.
        return f"threads run in this process ({', '.join(sorted(others))})"
    return None


def close_connections() -> None:
    """No database connection crosses a fork: this thread's are closed (the only thread),
    and each side opens its own."""
    for connection in connections.all(initialized_only=True):
        connection.close()


def fork(main: Callable[[], int], *, own_group: bool, on_stop=signal.SIG_DFL) -> int:
    """Fork; the child runs `main` and exits with what it returns (an exception: its
    traceback and 1), never returning here. Returns the child's pid. `own_group`: a
    process group of its own, so that a terminal's Ctrl-C reaches the supervisor alone.
    `on_stop`: what SIGTERM and SIGINT do in the child until `main` says otherwise."""
    close_connections()
    for stream in (sys.stdout, sys.stderr):  # else both sides would write it out
        with contextlib.suppress(Exception):
            stream.flush()
    # Held across the fork: a stop that reached the child before it dropped the parent's
    # handlers would set the parent's event, in the child, and the child would never drain.
    held = signal.pthread_sigmask(signal.SIG_BLOCK, STOPS)
    try:
        pid = os.fork()
    except BaseException:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        raise
    if pid:
        if own_group:
            # Both sides set it, so that it is set before either goes on.
            with contextlib.suppress(OSError):
                os.setpgid(pid, pid)
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        return pid
    code = 1
    try:
        if own_group:
            os.setpgid(0, 0)
        # The parent's handlers stop the parent: the child installs its own. Until then a
        # stop (held, or on its way) does what `on_stop` says, by default end it.
        for signum in STOPS:
            signal.signal(signum, on_stop)
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        code = main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
        if isinstance(exc.code, str):
            print(exc.code, file=sys.stderr)
    except BaseException:
        traceback.print_exc()
    finally:
        exit_now(code)


def exit_now(code: int) -> NoReturn:
    """Exit at once: the atexit hooks (logging's flush among them, and the project's) and
    the database connections closed, without the interpreter's teardown, which only frees
    memory the exit gives back anyway (0.2 s of a worker's CPU, half a second, measured)."""
    with contextlib.suppress(Exception):
        connections.close_all()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)
