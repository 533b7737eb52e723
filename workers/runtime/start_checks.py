"""The slots' start checks: whether the held jobs they go on to may start without a start
marker (`JobQueue.may_start`: still this run's, queue not paused, fail-fast batch not
failed), one read for every slot asking at the time.

A slot that hands in an outcome without waiting for its write (slots.py) must still not
start a held job whose run an operator took back, or whose queue was paused, since the
claim. One read per job was a tenth of a no-op job's cost on the servers and more on
SQLite; the slots of a claim ask within a millisecond of each other, so one read answers
them all. The rule that keeps it exact: an ask is answered only by a read that began after
it was asked, so a take-back committed before a slot asked is always seen, as with a read
of its own. The asks are gathered in rounds: the first ask of a round reads for every ask
of it, once no read is in flight; the asks that come while it reads make the next round
(at most two reads' time for any ask).

Each round has its own condition, so a read's end wakes only the asks it answered and the
next round's first ask: waking every waiter (to find most of them unanswered, waiting for
the next read) was a third of the checks' cost on PostgreSQL, measured.
"""

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
