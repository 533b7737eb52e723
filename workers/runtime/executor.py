"""Running one handler call: sync handlers in threads, async ones on an event loop, each
within the job's timeout, and turning what happened into a `JobOutcome` (or `Interrupted`,
when the database went away under the handler)."""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from datetime import timedelta
from traceback import format_exception
from typing import Any, NamedTuple

from asgiref.sync import sync_to_async
from django.db import connection

from queues.api import Job, JobOutcome
from workers.runtime.connections import after_job, before_job, close_all, lost_database
from workers.runtime.handler_thread import HandlerThreads, HandlerTimeout

logger = logging.getLogger("workers")


class DatabaseLost(Exception):
    """Raised in place of a handler's error that a lost database caused."""


class JobError(Exception):
    """Raise from a handler to fail its run with exactly this message (no class name).
    `exception_class` (a dotted path) and `traceback`, if given, are what the error history
    records for it instead of its own (the django.tasks path gives the task's)."""

    def __init__(
        self, message: str = "", *, exception_class: str | None = None, traceback=None
    ) -> None:
        super().__init__(message)
        self.exception_class = exception_class
        self.traceback = traceback


class _HandlerExit(Exception):
    """Carries a KeyboardInterrupt or SystemExit that an async handler raised from its
    task to the slot: asyncio lets those two out of the event loop, whose thread would then
    end and every later async run wait for ever."""

    def __init__(self, error: BaseException) -> None:
        super().__init__()
        self.error = error


class RunawayHandler(Exception):
    """Raised by `Worker.run` (after it drained) when a sync handler's thread had not come
    back within the job's timeout plus the grace period: the process should end, so that
    its supervisor starts a fresh one (the thread cannot be stopped otherwise)."""


@dataclass(frozen=True)
class Interrupted:
    """A run that failed only because the database went away: not the job's fault, so its
    attempt is given back and it runs again as soon as the database is back."""

    error: str


class Execution(NamedTuple):
    """How a run went (a tuple: one is built for every job)."""

    outcome: JobOutcome | Interrupted
    #: The thread of a sync handler that ran past its timeout and is still running.
    straggler: threading.Thread | None = None
    #: What the handler raised, for its run's span (queues.tracing).
    error: BaseException | None = None


class EventLoop:
    """One event loop in its own thread, started on first use, for every async handler of
    the worker runs of a hub (hub.py). Coroutines from any slot thread are scheduled on it;
    `cancel(job)` cancels the task of the job's handler."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._tasks: dict = {}  # job id -> the task of its handler; used on the loop only

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

    def run(self, awaitable, timeout: float | None, job: Job) -> Any:
        future = asyncio.run_coroutine_threadsafe(self._awaited(awaitable, job), self._ensure())
        try:
            return future.result(timeout)
        except FutureTimeout:
            future.cancel()  # cancels the task on the loop: async handlers really stop
            raise HandlerTimeout from None
        except _HandlerExit as carried:
            error = carried.error
        raise error  # out of the except block: the handler's error keeps its own context

    async def _awaited(self, awaitable, job: Job):
        task = asyncio.current_task()
        self._tasks[job.id] = task
        if job.cancel_requested():  # asked before the task existed: `cancel` missed it
            task.cancel()
        try:
            return await _awaited(awaitable)
        except (KeyboardInterrupt, SystemExit) as exc:
            raise _HandlerExit(exc) from None
        finally:
            self._tasks.pop(job.id, None)

    def cancel(self, job: Job) -> None:
        """Cancel the task of `job`'s async handler, if one is running (the handler gets a
        CancelledError at its current await). Call it once `job.cancel_requested()`."""
        loop = self._loop
        try:
            if loop is not None:
                loop.call_soon_threadsafe(self._cancel_task, job.id)
        except RuntimeError:  # the loop closed meanwhile: the run is over, and its tasks
            pass

    def _cancel_task(self, job_id) -> None:
        task = self._tasks.get(job_id)
        if task is not None:
            task.cancel()

    def close(self) -> None:
        with self._lock:
            loop, thread, self._loop = self._loop, self._thread, None
        if loop is not None:
            # The connections that async handlers opened in asgiref's thread would outlive
            # the run (with CONN_MAX_AGE), as nothing else closes them.
            closing = asyncio.run_coroutine_threadsafe(sync_to_async(close_all)(), loop)
            try:
                closing.result(5)
            except Exception:  # a connection that cannot even be closed is gone anyway
                logger.debug("closing the async handlers' connections failed", exc_info=True)
            loop.call_soon_threadsafe(loop.stop)
            thread.join(5)
            if not thread.is_alive():
                loop.close()


def _call(handler, job: Job) -> Any:
    """`handler(job)` in this thread, its connections' due health checks passed cheaply
    where they can be (`before_job`); afterwards (also after an error) this thread's
    connections are made fit for its next job."""
    try:
        before_job()
        return handler(job)
    except BaseException as exc:
        if lost_database(exc):
            raise DatabaseLost from exc
        raise
    finally:
        after_job()


async def _awaited(awaitable):
    # An async handler's ORM calls run in asgiref's thread for thread-sensitive code (as
    # Django's async ORM does): its connections are checked there, as a sync handler's are
    # in its own thread.
    try:
        return await awaitable
    except Exception as exc:
        if await sync_to_async(lost_database)(exc):
            raise DatabaseLost from exc
        raise
    finally:
        await sync_to_async(after_job)()


def _call_in_thread(handler, job: Job, timeout: float, threads: HandlerThreads | None) -> Any:
    """A sync call that may outlive its timeout: it runs in the slot's handler thread (a
    thread of its own for a call from elsewhere), which is left behind on a timeout (Python
    cannot stop a thread; the slot waits for it, see slots.py); its outcome is then
    discarded by the run's fencing."""
    own = threads is None
    if own:
        threads = HandlerThreads()
    try:
        return threads.call(f"job-{job.id}", timeout, _call, handler, job)
    finally:
        if own:
            threads.close()


#: What most handlers return: never awaitable, and cheaper to tell by type than by
#: `inspect.isawaitable`'s checks.
_PLAIN = frozenset({type(None), dict, list, str, int, float, bool})


def execute(
    handler,
    job: Job,
    timeout: timedelta | None,
    loop: EventLoop,
    threads: HandlerThreads | None = None,
) -> Execution:
    """Call `handler(job)` and say how the run ended: its return value is the result, an
    exception a failed run (or an interrupted one, if the database went away), running past
    `timeout` a timed-out run. A sync call with a timeout runs in `threads` (the slot's)."""
    seconds = timeout.total_seconds() if timeout else None
    try:
        if seconds is None:
            value = _call(handler, job)
        else:
            value = _call_in_thread(handler, job, seconds, threads)
        if type(value) not in _PLAIN and inspect.isawaitable(value):
            value = loop.run(value, seconds, job)
    except HandlerTimeout as exc:
        return Execution(JobOutcome.timed_out(f"Job timed out after {seconds:g}s"), exc.thread)
    except DatabaseLost as exc:
        error = describe(exc.__cause__)
        logger.warning(
            "job %s on %s: the database went away under it: %s", job.id, job.queue_name, error
        )
        return Execution(Interrupted(error))
    except BaseException as exc:
        # Whatever a handler raises (KeyboardInterrupt and SystemExit too) fails its job,
        # not the worker: a signal to the worker never lands in a handler, as the command
        # turns SIGINT and SIGTERM into a drain and handlers run outside the main thread.
        logger.info(
            "job %s on %s failed: %r",
            job.id,
            job.queue_name,
            exc,
            extra={"job_id": str(job.id), "queue": job.queue_name, "attempt": job.attempts},
        )
        return Execution(failure(exc), error=exc)
    return Execution(JobOutcome.completed(value))


def failure(exc: BaseException) -> JobOutcome:
    """The failed outcome of a run that raised `exc`: its message, and for the error history
    its class and traceback (the queue cleans and cuts them)."""
    given = exc.exception_class if isinstance(exc, JobError) else None
    if given:
        return JobOutcome.failed(describe(exc), exc.traceback, given)
    kind = type(exc)
    try:
        trace = "".join(format_exception(exc))
    except Exception:  # as for its message: a traceback that cannot be drawn is no reason
        trace = None
    return JobOutcome.failed(describe(exc), trace, f"{kind.__module__}.{kind.__qualname__}")


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
