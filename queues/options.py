"""Claim options: `DequeueOptions` (batch size, lease) and `PriorityWeights` (strict or
weighted choice between priority levels). `DEFAULT_LEASE` is the one default lease: the
workers' settings (workers/defaults.py) re-use it."""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import timedelta
from types import MappingProxyType

from queues.enums import JobPriority
from queues.validation import check_duration

#: A claimed job's lease: a heartbeat every third of it (100 s) costs little, and a process
#: killed outright keeps its jobs from the reaper no longer than this.
DEFAULT_LEASE = timedelta(minutes=5)
#: Upper bound on one claim, so that one statement never locks an unbounded number of rows.
MAX_BATCH_SIZE = 1000

_DEFAULT_WEIGHTS = {
    JobPriority.BACKGROUND: 1,
    JobPriority.LOW: 2,
    JobPriority.NORMAL: 5,
    JobPriority.HIGH: 10,
    JobPriority.CRITICAL: 20,
}


@dataclass(frozen=True)
class PriorityWeights:
    """Weighted selection between priority levels, or strict order.

    A level's chance is its weight over the sum of the weights of the levels that have
    claimable jobs right now. A weight of 0 means "only when no weighted level has work".
    """

    weights: Mapping[JobPriority, int] = field(
        default_factory=lambda: MappingProxyType(dict(_DEFAULT_WEIGHTS))
    )
    strict_priority: bool = False

    def __post_init__(self) -> None:
        clean = {}
        for priority, weight in dict(self.weights).items():
            level = _priority(priority)
            if isinstance(weight, bool) or not isinstance(weight, int) or weight < 0:
                raise ValueError(f"weight for {level.name} must be a whole number >= 0")
            clean[level] = weight
        object.__setattr__(self, "weights", MappingProxyType(clean))

    @classmethod
    def strict(cls) -> PriorityWeights:
        return cls(weights={}, strict_priority=True)

    def with_weight(self, priority: JobPriority | int, weight: int) -> PriorityWeights:
        return replace(self, weights={**self.weights, _priority(priority): weight})

    def weight_of(self, priority: JobPriority) -> int:
        return self.weights.get(priority, 1)

    def level_order(self, present: Iterable[int], rng: random.Random) -> list[int]:
        """Order the `present` levels for a claim: each next level is picked by weight
        among those not yet picked (strict: highest first)."""
        levels = sorted({int(p) for p in present}, reverse=True)
        if self.strict_priority:
            return levels
        order: list[int] = []
        while levels:
            weights = [self.weight_of(JobPriority(level)) for level in levels]
            total = sum(weights)
            if total == 0:
                order.extend(levels)  # only zero weights left: strict among them
                break
            pick = rng.uniform(0, total)
            index = 0
            last = max(i for i, w in enumerate(weights) if w)
            while index < last and (not weights[index] or pick > weights[index]):
                pick -= weights[index]
                index += 1
            level = levels[index]
            order.append(level)
            levels.remove(level)
        return order


def _priority(value: JobPriority | int) -> JobPriority:
    if isinstance(value, bool):
        raise ValueError(f"unknown priority: {value!r}")
    try:
        return JobPriority(value)
    except ValueError as exc:
        raise ValueError(f"unknown priority: {value!r}") from exc


@dataclass(frozen=True)
class DequeueOptions:
    batch_size: int = 1
    lease_duration: timedelta = DEFAULT_LEASE
    priority_weights: PriorityWeights | None = None

    def __post_init__(self) -> None:
        size = self.batch_size
        if isinstance(size, bool) or not isinstance(size, int) or not 0 <= size <= MAX_BATCH_SIZE:
            raise ValueError(f"batch_size must be a whole number from 0 to {MAX_BATCH_SIZE}")
        check_duration(self.lease_duration, "lease_duration")

    @classmethod
    def batch(cls, n: int) -> DequeueOptions:
        return cls(batch_size=n)

    def with_lease_duration(self, duration: timedelta) -> DequeueOptions:
        return replace(self, lease_duration=duration)

    def with_priority_weights(self, weights: PriorityWeights | None) -> DequeueOptions:
        return replace(self, priority_weights=weights)

    def with_batch_size(self, n: int) -> DequeueOptions:
        return replace(self, batch_size=n)
