"""`QueueCore`: what the parts of `JobQueue` (its mixins, and the helpers that take the queue)
use of the queue they are part of, declared once. `JobQueue` provides all of it; a part uses
nothing else of the queue but its own members. See docs/design/engine.md.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Protocol
from uuid import UUID

from queues.clock import MockClock, SystemClock
from queues.models import Job
from queues.store.base import Store


class QueueCore(Protocol):
    """The queue as its parts see it: its state, and the methods of the host or of another
    part that a part calls."""

    #: What `now()` reads: the system clock, or a `MockClock` that moves only when told.
    clock: SystemClock | MockClock
    #: The chance behind weighted claims and retry jitter (seeded by tests).
    rng: random.Random

    @property
    def store(self) -> Store:
        """The store every read and write goes through (a database's, or memory)."""
        ...

    def now(self) -> datetime:
        """The time by `clock`: what every write stamps."""
        ...

    def _atomic[T](self, fn: Callable[[], T]) -> T:
        """`fn()` in one transaction (a savepoint inside the caller's)."""
        ...

    def get_job(self, job_id: UUID | str) -> Job | None:
        """The row of `job_id`, unlocked; None if there is none."""
        ...

    def _locked(self, job_id: UUID | str) -> Job:
        """The row of `job_id`, locked until the transaction ends; `JobNotFound` if none."""
        ...

    def enqueue(self, job: Job) -> UUID:
        """Insert one job (`Enqueues`); the id of the job that holds its unique key."""
        ...

    def _prepare(self, jobs: Sequence[Job], now: datetime, declared: bool = False) -> None:
        """Check new jobs and give them their unique slots (`Enqueues`)."""
        ...

    def _insert(self, jobs: list[Job], now: datetime) -> dict[UUID, UUID]:
        """Insert prepared jobs (`Enqueues`): the duplicates' ids -> their holders' ids."""
        ...


# A part's base: `QueueCore` to a type checker (a part may use what it declares), nothing at
# run time (no protocol machinery in `JobQueue`'s class, no stub to fall back on).
if TYPE_CHECKING:
    QueuePart = QueueCore
else:
    QueuePart = object
