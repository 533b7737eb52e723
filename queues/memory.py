"""TestQueue: the queue in memory, with a MockClock (placeholder until implemented)."""

from __future__ import annotations


class TestQueue:
    __test__ = False  # not a pytest test class

    def __init__(self, clock=None) -> None:
        raise NotImplementedError("TestQueue is being implemented")
