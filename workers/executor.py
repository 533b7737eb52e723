"""Running one handler call: sync handlers in threads, async ones on an event loop, each
within the job's timeout, and turning what happened into a `JobOutcome`."""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from datetime import timedelta
from typing import Any

from django.db import connection

from queues.api import Job, JobOutcome

logger = logging.getLogger("workers")


class HandlerTimeout(Exception):
    pass


class JobError(Exception):
    """Raise from a handler to fail its run with exactly this message (no class name)."""


class EventLoop:
    """One event loop in its own thread, started on first use, for every async handler of
    a worker run. Coroutines from any slot thread are scheduled on it."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def _ensure(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                self._thread = threading.Thread(
                    target=self._serve, name="worker-event-loop", daemon=True
                )
                self._thread.start()
            return self._loop

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_forever()
        finally:
            connection.close()

    def run(self, awaitable, timeout: float | None) -> Any:
        future = asyncio.run_coroutine_threadsafe(_awaited(awaitable), self._ensure())
        try:
            return future.result(timeout)
        except FutureTimeout:
            future.cancel()  # cancels the task on the loop: async handlers really stop
            raise HandlerTimeout from None

    def close(self) -> None:
        with self._lock:
            loop, thread, self._loop = self._loop, self._thread, None
        if loop is not None:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(5)
            if not thread.is_alive():
                loop.close()


async def _awaited(awaitable):
    return await awaitable


def _call_in_thread(handler, job: Job, timeout: float) -> Any:
    """A sync call that may outlive its timeout: it runs in its own daemon thread, which is
    left behind on a timeout (Python cannot stop a thread); its outcome is then discarded
    by the run's fencing, and the thread closes its connection when it ends."""
    future: Future = Future()

    def target():
        try:
            future.set_result(handler(job))
        except BaseException as exc:
            future.set_exception(exc)
        finally:
            connection.close()

    threading.Thread(target=target, name=f"job-{job.id}", daemon=True).start()
    try:
        return future.result(timeout)
    except FutureTimeout:
        raise HandlerTimeout from None


def execute(handler, job: Job, timeout: timedelta | None, loop: EventLoop) -> JobOutcome:
    """Call `handler(job)` and say how the run ended: its return value is the result, an
    exception a failed run, running past `timeout` a timed-out run."""
    seconds = timeout.total_seconds() if timeout else None
    try:
        if seconds is None:
            value = handler(job)
        else:
            value = _call_in_thread(handler, job, seconds)
        if inspect.isawaitable(value):
            value = loop.run(value, seconds)
    except HandlerTimeout:
        return JobOutcome.timed_out(f"Job timed out after {seconds:g}s")
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # SystemExit from a handler fails its job, not the worker
        logger.info("job %s on %s failed: %r", job.id, job.queue_name, exc)
        return JobOutcome.failed(describe(exc))
    return JobOutcome.completed(value)


def describe(exc: BaseException) -> str:
    """The error recorded for `exc` (the queue cleans and cuts it to what a column holds)."""
    try:
        message = str(exc)
    except Exception:  # a handler's exception whose __str__ fails still fails its job
        message = "<the exception's message could not be read>"
    if isinstance(exc, JobError):
        return message
    name = type(exc).__name__
    return f"{name}: {message}" if message else name
