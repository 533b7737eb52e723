"""The heartbeat's schedule, on a clock the test moves: beats a third of the lease apart
whatever the check interval, checks between them while jobs run, and a beat that misses a run
looks for it at once. No database: the queue records what it is asked."""

from __future__ import annotations

from datetime import timedelta

from queues.api import Job
from workers.runtime.heartbeat import Heartbeat


class Clock:
    """A monotonic clock and a `finished` event: each wait moves the clock, until `until`."""

    def __init__(self, until: float) -> None:
        self.now, self.until = 0.0, until

    def __call__(self) -> float:
        return self.now

    def wait(self, timeout: float) -> bool:
        self.now += timeout
        return self.now > self.until


class Queue:
    using = "default"

    def __init__(self, lost_after: float | None = None, clock=None) -> None:
        self.beats, self.checks = [], []
        self.lost_after, self.clock = lost_after, clock

    def _lost(self) -> bool:
        return self.lost_after is not None and self.clock.now >= self.lost_after

    def heartbeat_jobs(self, jobs, lease) -> int:
        self.beats.append(round(self.clock.now, 3))
        return len(jobs) - self._lost()

    def lost_runs(self, jobs) -> set:
        self.checks.append(round(self.clock.now, 3))
        return {jobs[0].id} if self._lost() else set()


def run(lease: float, check: float | None, until: float, lost_after=None):
    clock = Clock(until)
    queue = Queue(lost_after, clock)
    jobs, lost = [Job(queue_name="q")], []
    check_interval = None if check is None else timedelta(seconds=check)
    heartbeat = Heartbeat(
        queue, timedelta(seconds=lease), lambda: jobs, lambda: jobs, lost.append, check_interval
    )
    heartbeat.clock = clock
    heartbeat.run(clock)
    return queue, lost


def test_beats_stay_a_third_of_the_lease_apart_and_checks_run_between_them():
    queue, lost = run(lease=4.5, check=1.0, until=6.0)
    assert queue.beats == [1.5, 3.0, 4.5, 6.0]
    # Between beats, a check a second after the last beat or check.
    assert queue.checks == [1.0, 2.5, 4.0, 5.5] and lost == []


def test_without_a_check_interval_only_the_beats_ask():
    queue, _ = run(lease=3.0, check=None, until=5.0)
    assert queue.beats == [1.0, 2.0, 3.0, 4.0, 5.0] and queue.checks == []


def test_a_check_interval_longer_than_the_beats_is_the_beats():
    queue, _ = run(lease=3.0, check=10.0, until=3.0)
    assert queue.beats == [1.0, 2.0, 3.0] and queue.checks == []


def test_a_beat_that_misses_a_run_finds_it_at_once():
    queue, lost = run(lease=30.0, check=None, until=25.0, lost_after=15.0)
    assert queue.beats == [10.0, 20.0]
    assert queue.checks == [20.0], "the beat at 20 s missed a run: checked at once"
    assert len(lost) == 1
