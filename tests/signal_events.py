"""A receiver of every lifecycle signal for the tests: what it heard, and what another
connection read of the job at that moment (the signal must come after the commit)."""

from __future__ import annotations

import threading
from contextlib import contextmanager

from django.db import connections

from queues import signals
from queues.models import Job


class Event(dict):
    """One signal heard: its arguments, `name`, `committed_status` (the job's status read
    from another connection when it was sent) and `in_transaction` (whether the sending
    thread's connection was inside a transaction)."""

    @property
    def name(self) -> str:
        return self["name"]


def read_elsewhere(read):
    """`read()` in a new thread: a connection of its own, which sees only what is committed."""
    answer: dict = {}

    def run():
        try:
            answer["value"] = read()
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(30)
    assert not thread.is_alive(), "the read from another connection hung (a lock held?)"
    return answer["value"]


class Recorder:
    """Hears every signal. `read_status(job_id)` reads the job's status elsewhere (default:
    the database's, through the ORM on another connection); `also(job)` runs in the receiver
    (e.g. a read of the handler's row)."""

    def __init__(self, read_status=None, using: str = "default", also=None) -> None:
        self.lock = threading.Lock()
        self.events: list[Event] = []
        self.using = using
        self.read_status = read_status or self._orm_status
        self.also = also

    def _orm_status(self, job_id):
        row = Job.objects.using(self.using).filter(id=job_id).values_list("status", flat=True)
        return row.first()

    def __call__(self, signal, sender, **arguments) -> None:
        event = Event(arguments, name=signal.name, sender=sender)
        event["in_transaction"] = connections[self.using].in_atomic_block
        event["committed_status"] = read_elsewhere(lambda: self.read_status(arguments["job_id"]))
        if self.also is not None:
            event["also"] = read_elsewhere(lambda: self.also(arguments["job"]))
        with self.lock:
            self.events.append(event)

    def of(self, job_id) -> list[Event]:
        with self.lock:
            return [event for event in self.events if event["job_id"] == job_id]

    def names(self, job_id) -> list[str]:
        return [event.name for event in self.of(job_id)]


@contextmanager
def connected(receiver, *which):
    """`receiver` connected to `which` signals (default all) for the block."""
    which = which or signals.ALL
    for signal in which:
        signal.connect(receiver, weak=False)
    try:
        yield receiver
    finally:
        for signal in which:
            signal.disconnect(receiver)
