"""The process's one look for new work for all its idle queues (`workers.runtime.watch`),
where no NOTIFY wakes them: one `next_due_many` call reads every sleeping queue; a queue
with a due job is woken, one whose job is due before its sleep ends sleeps until then; on
SQLite nothing is read while no other connection committed; the thread starts with the
first sleeper and ends with the last subscriber. And a pickup's side: what it does with
what the watch saw."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta

from workers.runtime import pickup as pickup_module
from workers.runtime.pickup import CHANGED, POLL, SCHEDULED, Pickup
from workers.runtime.watch import Watch

NOW = datetime(2026, 1, 1, tzinfo=UTC)
WAIT = 10.0


class Database:
    """Stands for a queue: each queue's next due job, as seconds from now (None: none), a
    data_version, and the names each `next_due_many` call asked for."""

    def __init__(self, using: str, version: int | None = None) -> None:
        self.using = using
        self.version = version
        self.due: dict[str, float | None] = {}
        self.calls: list[list[str]] = []
        self.looked = threading.Event()

    def data_version(self):
        return self.version

    def next_due_many(self, names):
        self.calls.append(list(names))
        self.looked.set()
        return {
            name: None if self.due.get(name) is None else NOW + timedelta(seconds=self.due[name])
            for name in names
        }

    def now(self):
        return NOW


class Sleeper:
    """Stands for a sleeping pickup: records what the watch saw for its queue."""

    def __init__(self, queue_name: str, checks_from: float = 0.0) -> None:
        self.queue_name = queue_name
        self.checks_from = checks_from
        self.dues: list[float] = []

    def seen(self, due: float) -> None:
        self.dues.append(due)


def watch_of(database: Database, *sleepers: Sleeper) -> Watch:
    watch = Watch(database)
    watch.sleepers.update((sleeper, None) for sleeper in sleepers)
    return watch


def test_one_look_reads_every_sleeping_queue_in_one_call():
    database = Database("a")
    database.due.update(a=-1.0, b=30.0)
    a, b, c = Sleeper("a"), Sleeper("b"), Sleeper("c")
    watch_of(database, a, b, c).look()
    assert database.calls == [["a", "b", "c"]]
    assert a.dues == [-1.0]  # due: the pickup is woken
    assert b.dues == [30.0]  # due later: the pickup may sleep until then
    assert c.dues == []  # nothing due: nothing to say


def test_two_sleepers_of_one_queue_share_its_read():
    database = Database("a")
    database.due["a"] = 0.0
    first, second = Sleeper("a"), Sleeper("a")
    watch_of(database, first, second).look()
    assert database.calls == [["a"]]
    assert first.dues == second.dues == [0.0]


def test_a_sleeper_is_read_only_from_its_checks_start():
    database = Database("a")
    later = Sleeper("b", checks_from=time.monotonic() + 3600)  # backing off
    watch_of(database, Sleeper("a"), later).look()
    assert database.calls == [["a"]]
    watch_of(database, later).look()
    assert database.calls == [["a"]]  # no sleeper to look for: no statement


def test_on_sqlite_a_look_reads_nothing_until_another_connection_commits():
    database = Database("a", version=7)
    a = Sleeper("a")
    watch = watch_of(database, a)
    watch.look()
    assert database.calls == [["a"]]  # a new sleeper is read once, whatever the version
    watch.look()
    assert database.calls == [["a"]]  # nothing committed since
    b = Sleeper("b")
    watch.sleepers[b] = None
    watch.look()
    assert database.calls == [["a"], ["b"]]  # only the sleeper not read at this version
    database.version = 8
    watch.look()
    assert database.calls == [["a"], ["b"], ["a", "b"]]


def test_the_thread_starts_with_the_first_sleeper_and_ends_with_the_last_subscriber():
    database = Database("watch-thread")
    database.due["a"] = -1.0
    watch = Watch.of(database)
    other = Watch.of(database)
    assert other is watch  # one a process and database
    assert watch.thread is None  # no sleeper yet: no thread, no connection
    sleeper = Sleeper("a")
    watch.sleep(sleeper, 0.01)
    assert database.looked.wait(WAIT)
    watch.awake(sleeper)
    thread = watch.thread
    other.unsubscribe()
    assert thread.is_alive()  # one subscriber is left
    watch.unsubscribe()
    assert not thread.is_alive()
    assert Watch.of(database) is not watch  # the next subscriber gets a new one
    Watch._watches.pop("watch-thread").unsubscribe()


# A pickup's side ----------------------------------------------------------------------


class State:
    stopping = False

    def __init__(self) -> None:
        self.wake = threading.Event()


def sleeping_pickup() -> Pickup:
    pickup = Pickup(Database("unused"), "q", State(), poll_seconds=3600)
    pickup.deadline = time.monotonic() + 3600
    return pickup


def test_a_due_job_seen_by_the_watch_ends_the_sleep():
    pickup = sleeping_pickup()
    pickup.seen(-0.5)
    assert pickup._wait(POLL, at_rate=False, check=0.05) == CHANGED


def test_a_job_due_before_the_sleep_ends_moves_its_end():
    pickup = sleeping_pickup()
    pickup.seen(0.02)
    assert pickup.deadline < time.monotonic() + 1
    assert pickup._wait(POLL, at_rate=False, check=0.05) == SCHEDULED


def test_a_job_due_after_the_sleep_ends_changes_nothing():
    pickup = sleeping_pickup()
    deadline = pickup.deadline
    pickup.seen(7200)
    assert pickup.deadline == deadline
    assert not pickup.event.is_set()


def test_a_pickup_that_checks_subscribes_to_the_watch_and_leaves_it(monkeypatch):
    database = Database("watch-pickup")
    database.store = type("Store", (), {"vendor": "mysql"})()
    monkeypatch.setattr(pickup_module, "can_listen", lambda using: False)
    with Pickup(database, "q", State(), poll_seconds=3600) as pickup:
        assert pickup.watch is Watch._watches["watch-pickup"]
    assert "watch-pickup" not in Watch._watches
