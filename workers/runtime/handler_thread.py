"""Where a slot's sync handlers with a timeout run: in a thread of their own, so that the
slot stops waiting at the timeout. One thread serves every such call of its slot, one at a
time, until a handler outlives its timeout: that thread is then left to its handler (the
slot waits for it up to the grace period, see slots.py) and ends when the handler returns;
the slot's next timed call gets a new thread. Why not a thread a call:
docs/design/worker.md."""

from __future__ import annotations

import contextvars
import queue
import threading
from collections.abc import Callable
from typing import Any

from workers.runtime.connections import close_all


class HandlerTimeout(Exception):
    def __init__(self, thread: threading.Thread | None = None) -> None:
        super().__init__()
        self.thread = thread  # a sync handler's thread, still running


#: A handler thread's name between calls; during one, `job-<id>` (its job's).
IDLE = "handler-idle"


class _Thread:
    """A daemon thread running the calls put to it, one at a time, in the context each was
    made in (so that a handler's spans nest under its run's). It closes its database
    connections when it ends."""

    def __init__(self) -> None:
        self.calls: queue.SimpleQueue = queue.SimpleQueue()
        self.results: queue.SimpleQueue = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._serve, name=IDLE, daemon=True)
        self.thread.start()

    def retire(self) -> None:
        """No more calls: the thread ends once the call it is running, if any, returns."""
        self.calls.put(None)

    def _serve(self) -> None:
        thread = threading.current_thread()
        try:
            while (call := self.calls.get()) is not None:
                name, context, function, args = call
                del call  # the job is not kept alive while this thread waits for the next
                thread.name = name
                try:
                    self.results.put((False, context.run(function, *args)))
                except BaseException as exc:  # the caller's to judge, as a direct call's
                    self.results.put((True, exc))
                thread.name = IDLE
                del context, function, args
        finally:
            close_all()


class HandlerThreads:
    """A slot's thread for calls with a timeout: started at the first, replaced after a call
    outlives its timeout, retired by `close` (at the end of the slot's run)."""

    def __init__(self) -> None:
        self._current: _Thread | None = None

    def call(self, name: str, timeout: float, function: Callable[..., Any], *args) -> Any:
        """`function(*args)` in the slot's handler thread, named `name` meanwhile: its value,
        or its exception raised here; after `timeout` seconds, HandlerTimeout with the
        thread, which is left to the call."""
        current = self._current
        if current is None or not current.thread.is_alive():
            current = self._current = _Thread()
        current.calls.put((name, contextvars.copy_context(), function, args))
        try:
            failed, value = current.results.get(timeout=timeout)
        except queue.Empty:
            self.close()  # its late answer is nobody's: the next call gets a new thread
            raise HandlerTimeout(current.thread) from None
        except BaseException:
            self.close()  # the call is under way and its answer must not reach the next
            raise
        if failed:
            try:
                raise value
            finally:
                del value  # no cycle through this frame's traceback
        return value

    def close(self) -> None:
        """Retire the thread (once: it is forgotten here)."""
        if self._current is not None:
            self._current.retire()
            self._current = None
