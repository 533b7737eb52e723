"""The slots' start checks: whether the held jobs they go on to may start without a start
marker (`JobQueue.may_start`: still this run's, queue not paused, fail-fast batch not
failed), one read for every slot asking at the time.

A slot that hands in an outcome without waiting for its write (slots.py) must still not
start a held job whose run an operator took back, or whose queue was paused, since the
claim. One read per job was a tenth of a no-op job's cost on the servers and more on
SQLite; the slots of a claim ask within a millisecond of each other, so one read answers
them all. The rule that keeps it exact: an ask is answered only by a read that began after
it was asked, so a take-back committed before a slot asked is always seen, as with a read
of its own. The first slot to ask while no read is in flight reads for itself and every
ask waiting; the asks that come while it reads wait for it to finish, and the first of
them then reads for all of those (at most two reads' time for any ask).
"""

from __future__ import annotations

import logging
import threading

from django.db import DatabaseError

from queues.api import Job

from ..connections import after_job

logger = logging.getLogger("workers")


class _Ask:
    __slots__ = ("job", "answer")

    def __init__(self, job: Job) -> None:
        self.job = job
        self.answer: bool | None = None  # set once a read answered it


class StartChecks:
    def __init__(self, queue) -> None:
        self.queue = queue
        self.lock = threading.Lock()
        self.answered = threading.Condition(self.lock)
        self.waiting: list[_Ask] = []  # asked since the read in flight began
        self.reading = False

    def may_start(self, job: Job) -> bool:
        """Whether `job` may start now without a start marker (False: the start marker
        decides, also when the read failed)."""
        ask = _Ask(job)
        with self.lock:
            self.waiting.append(ask)
            while ask.answer is None and self.reading:
                self.answered.wait()
            if ask.answer is not None:
                return ask.answer
            asks, self.waiting = self.waiting, []
            self.reading = True
        startable: set = set()
        try:
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
                self.answered.notify_all()
        return ask.answer
