"""Weighted priorities: a level's chance is its weight over the weights of the levels that
have claimable jobs."""

from __future__ import annotations

import random
from collections import Counter

from queues.api import DequeueOptions, Job, JobPriority, PriorityWeights
from tests.queues.conftest import unique_queue

LEVELS = (JobPriority.HIGH, JobPriority.NORMAL, JobPriority.LOW)  # default weights 10, 5, 2


def test_each_level_gets_its_weight_share(queue):
    queue.rng = random.Random(20261129)
    name = unique_queue("weighted_share")
    queue.enqueue_many(
        Job(queue_name=name, payload={}, priority=level) for level in LEVELS for _ in range(500)
    )
    options = DequeueOptions.batch(1).with_priority_weights(PriorityWeights())
    claims = 600
    seen = Counter(queue.dequeue(name, options)[0].priority for _ in range(claims))
    total_weight = 10 + 5 + 2
    for level, weight in zip(LEVELS, (10, 5, 2), strict=True):
        share = seen[level] / claims
        # Three standard deviations of a share over 600 draws is at most 0.06.
        assert abs(share - weight / total_weight) < 0.06, (level, seen)


def test_custom_weights_and_zero_weight_levels(queue):
    queue.rng = random.Random(7)
    name = unique_queue("weighted_zero")
    weights = PriorityWeights().with_weight(JobPriority.LOW, 0).with_weight(JobPriority.HIGH, 1)
    queue.enqueue_many(
        [Job(queue_name=name, payload={}, priority=JobPriority.LOW) for _ in range(3)]
        + [Job(queue_name=name, payload={}, priority=JobPriority.HIGH) for _ in range(3)]
    )
    options = DequeueOptions.batch(1).with_priority_weights(weights)
    order = [queue.dequeue(name, options)[0].priority for _ in range(6)]
    assert order == [JobPriority.HIGH] * 3 + [JobPriority.LOW] * 3, (
        "a zero-weight level runs only when no weighted level has work"
    )


def test_level_order_is_a_weighted_permutation():
    weights = PriorityWeights()
    rng = random.Random(3)
    firsts = Counter(weights.level_order([4, 0], rng)[0] for _ in range(4000))
    assert abs(firsts[4] / 4000 - 20 / 21) < 0.02
    assert sorted(weights.level_order([0, 1, 2, 3, 4], rng)) == [0, 1, 2, 3, 4]
    assert PriorityWeights.strict().level_order([1, 4, 2], rng) == [4, 2, 1]
