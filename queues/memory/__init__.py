"""The queue in memory: `TestQueue`, held to the behaviour of the database queue."""

from __future__ import annotations

from .queue import TestQueue

__all__ = ["TestQueue"]
