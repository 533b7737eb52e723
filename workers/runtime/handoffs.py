"""What the threads of a worker run hand each other: a held job (`HeldJob`), a slot's
request to the writer (`Request`) and a slot's share of held jobs (`Share`), with the claim's
start window that decides when a held job may start on the claim's own checks. See
docs/design/worker.md."""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass, field

from queues.api import Job, JobOutcome

#: A job a slot takes within this many seconds of its claim starts "at the claim": the claim
#: already recorded the start and checked the pause, so no start marker is written for it.
FRESH_START = 0.05


class HeldJob:
    """A claimed job waiting for a slot, when (monotonic) it was claimed, and whether the
    claim's checks stand for its start while it is fresh: true unless it is in a batch that
    may be fail-fast (one that failed since the claim must not start it, and only a read
    tells)."""

    __slots__ = ("job", "claimed_at", "claim_checks")

    def __init__(self, job: Job, claimed_at: float, claim_checks: bool) -> None:
        self.job = job
        self.claimed_at = claimed_at
        self.claim_checks = claim_checks

    def recent(self) -> bool:
        """Taken so soon after its claim that the claim's start time stands."""
        return time.monotonic() - self.claimed_at < FRESH_START

    def fresh(self) -> bool:
        """Taken so soon after its claim that the claim's start time and pause check stand,
        with no read (a job of a fail-fast batch, or of a batch whose mode is unknown, is
        read or gets its start marker: the batch may have failed since the claim)."""
        return self.claim_checks and self.recent()


class Latch:
    """A one-shot event for one writer and its waiting slot: a lock taken at birth and
    released by `set`. `threading.Event` builds a `Condition` per instance and wakes its
    waiter through it; a request a job made that the worker's largest hand-off cost."""

    __slots__ = ("_lock", "_set")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lock.acquire()
        self._set = False

    def set(self) -> None:
        """Let the waiters go; again is nothing (set by one thread: the writer)."""
        if not self._set:
            self._set = True
            self._lock.release()

    def is_set(self) -> bool:
        return self._set

    def wait(self, timeout: float | None = None) -> bool:
        """Whether it was set, waiting up to `timeout` seconds (None: for ever)."""
        if self._set:
            return True
        if self._lock.acquire(timeout=-1 if timeout is None else timeout):
            self._lock.release()  # for the next waiter
            return True
        return self._set


#: The most held jobs an idle slot takes from one claim, while jobs are short
#: (`RunState.per_slot`).
MAX_SHARE = 8


@dataclass
class Request:
    """A slot's request to the writer: an outcome to record, or a run to give back (one the
    database's outage cut short), and/or a held job to start."""

    finished: tuple[Job, JobOutcome] | None
    start: Job | None
    given_back: Job | None = None
    #: A held job taken within the claim's start window, to check with the write: it starts
    #: if the write's read (begun after this request) finds its run still this worker's.
    check: Job | None = None
    written: Latch = field(default_factory=Latch)
    answer: str | None = None  # what the start did (None: the database was gone)
    startable: set = field(default_factory=set)  # the ids the check let start
    asked_at: float = field(default_factory=time.monotonic)
    #: Its slot waits for the check only, not for the outcome's write (released early).
    early: bool = False


class Share:
    """The held jobs an idle slot took with its job from one claim, while jobs are short
    (`RunState.take`): held still (the heartbeat keeps their leases, a stop releases them)
    until the slot starts each, on the claim's checks while within its start window."""

    __slots__ = ("jobs", "claimed_at")

    def __init__(self) -> None:
        self.jobs: deque[Job] = deque()
        self.claimed_at = 0.0  # monotonic, of the claim the jobs came from
