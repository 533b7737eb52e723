"""`TestQueue`: `JobQueue` in memory. The same code (`queues.engine.queue` and its parts)
runs on the memory store instead of a database, with a `MockClock` that moves only when
told; the conformance fixtures (`tests/queues/conftest.py`) run each queue test on both.
"""

from __future__ import annotations

import random

from queues.clock import MockClock
from queues.engine.queue import JobQueue
from queues.models import Job, ReaperRun
from queues.store.base import Match
from queues.store.memory.store import MemoryStore


class TestQueue(JobQueue):
    """The in-memory queue. `clock` defaults to a `MockClock` at the real now (`.clock`);
    `reaper_runs` lists what `requeue_stale_jobs` recorded."""

    __test__ = False  # not a pytest test class

    def __init__(self, clock=None, rng: random.Random | None = None) -> None:
        # Not JobQueue's __init__: a TestQueue has no database alias (`using`), only a store.
        self._setup(clock or MockClock(), rng, MemoryStore())

    def __repr__(self) -> str:
        return f"TestQueue(now={self.now().isoformat()})"

    @property
    def reaper_runs(self) -> list[ReaperRun]:
        return self.store.reaper_runs()

    def get_all_jobs(self) -> list[Job]:
        """Every job of every queue, oldest first (TestQueue only, as in Hammerwork)."""
        return sorted(self.store.find_jobs(Match()), key=lambda job: (job.created_at, str(job.id)))
