"""The slots' start checks: whether the held jobs they go on to may start without a start
marker (`JobQueue.may_start`), one read for every slot asking at the time, and never a
read that began before the ask. See docs/design/worker.md."""

from __future__ import annotations

import logging
import threading

from django.db import DatabaseError

from queues.api import Job
from workers.runtime.connections import after_job, before_job

logger = logging.getLogger("workers")


class _Ask:
    __slots__ = ("job", "answer")

    def __init__(self, job: Job) -> None:
        self.job = job
        self.answer: bool | None = None  # set once a read answered it


class _Round:
    """The asks one read answers: gathered until it begins, then closed."""

    __slots__ = ("asks", "answered")

    def __init__(self, lock: threading.Lock) -> None:
        self.asks: list[_Ask] = []
        self.answered = threading.Condition(lock)  # notified once its read has ended


class StartChecks:
    def __init__(self, queue) -> None:
        self.queue = queue
        self.lock = threading.Lock()
        self.gathering = _Round(self.lock)  # the asks the next read will answer
        self.reading = False
        # Only the gathering round's first ask waits on it (for the read in flight to end).
        self.turn = threading.Condition(self.lock)

    @property
    def waiting(self) -> list[_Ask]:
        """The asks waiting for a read to begin (for tests)."""
        return self.gathering.asks

    def may_start(self, job: Job) -> bool:
        """Whether `job` may start now without a start marker (False: the start marker
        decides, also when the read failed)."""
        ask = _Ask(job)
        with self.lock:
            round_ = self.gathering
            round_.asks.append(ask)
            if len(round_.asks) > 1:  # the round's first ask reads for this one
                while ask.answer is None:
                    round_.answered.wait()
                return ask.answer
            while self.reading:
                self.turn.wait()
            # This read begins after every ask of its round was made: the round closes.
            self.reading = True
            self.gathering = _Round(self.lock)
        asks = round_.asks
        startable: set = set()
        try:
            before_job()  # the read is on this slot's connection, due its health check
            startable = self.queue.may_start([each.job for each in asks])
        except DatabaseError:
            logger.debug("checking %d held jobs before they start failed", len(asks),
                         exc_info=True)  # fmt: skip
            after_job()  # a broken connection is not this slot's next handler's
        finally:
            with self.lock:
                for each in asks:
                    each.answer = each.job.id in startable
                self.reading = False
                self.turn.notify()
                round_.answered.notify_all()
        return ask.answer
