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

import pytest
from django.db import connection, connections

from queues.api import Job, JobQueue
from tests.conftest import unique_queue
from tests.pgbouncer.pooling import skip_through_a_pooler
from tests.workers.support.helpers import wait_until
from workers.runtime import pickup as pickup_module
from workers.runtime.pickup import CHANGED, SCHEDULED, Pickup
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

    sleep_number = 1

    def __init__(self, queue_name: str, checks_from: float = 0.0, database=None) -> None:
        self.queue_name = queue_name
        self.checks_from = checks_from
        self.queue = database or Database("unused")
        self.dues: list[float] = []
        self.got = threading.Event()

    def seen(self, due: float, number: int) -> None:
        assert number == self.sleep_number
        self.dues.append(due)
        self.got.set()


def watch_of(database: Database, *sleepers: Sleeper) -> Watch:
    watch = Watch(database)
    watch.sleepers.update((sleeper, (sleeper.sleep_number, None)) for sleeper in sleepers)
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
    watch.sleepers[b] = (b.sleep_number, None)
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
    try:
        assert other is watch  # one a process and database
        assert watch.thread is None  # no sleeper yet: no thread, no connection
        sleeper = Sleeper("a")
        watch.sleep(sleeper, 0.01)
        assert database.looked.wait(WAIT)
        watch.awake(sleeper)
        thread = watch.thread
        other.unsubscribe()
        assert thread.is_alive()  # one subscriber is left
    finally:
        watch.unsubscribe()
    assert not thread.is_alive()
    assert "watch-thread" not in Watch._watches  # the next subscriber gets a new one


class Failing(Database):
    """A database whose next `failures` looks raise `error`, then answer."""

    def __init__(self, using: str, error: Exception, failures: int) -> None:
        super().__init__(using)
        self.error, self.failures = error, failures

    def next_due_many(self, names):
        if self.failures:
            self.failures -= 1
            raise self.error
        return super().next_due_many(names)


def test_the_look_goes_on_after_a_connection_fault_and_after_a_bug():
    from django.db import InterfaceError

    for error in (InterfaceError("connection already closed"), KeyError("a bug")):
        database = Failing("watch-faults", error, failures=2)
        database.due["a"] = -1.0
        watch = Watch.of(database)
        sleeper = Sleeper("a", database=database)
        try:
            watch.sleep(sleeper, 0.01)
            assert sleeper.got.wait(WAIT), f"no look got through after {error!r}"
            assert database.failures == 0 and watch.thread.is_alive()
        finally:
            watch.awake(sleeper)
            watch.unsubscribe()


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor == "sqlite", reason="a server's connection to kill")
def test_a_look_whose_connection_the_server_killed_opens_a_new_one():
    skip_through_a_pooler()  # a pooled server session is not the watch's alone to kill
    queue, name = JobQueue(), unique_queue("watch_killed")
    backends: list[int] = []
    watch = Watch.of(queue)
    look = watch.look

    def noting_its_connection():
        if not backends:
            with connections[queue.using].cursor() as cursor:
                cursor.execute(BACKEND_ID[connection.vendor])
                backends.append(cursor.fetchone()[0])
        look()

    watch.look = noting_its_connection
    sleeper = Sleeper(name, database=queue)
    try:
        watch.sleep(sleeper, 0.01)
        wait_until(lambda: backends, WAIT, "the watch never looked")
        with connection.cursor() as cursor:  # a restart, a failover, MySQL's wait_timeout
            cursor.execute(KILL[connection.vendor], [backends[0]])
        queue.enqueue(Job(queue_name=name, payload={}))
        assert sleeper.got.wait(WAIT), "the new job was not seen after the connection died"
        assert sleeper.dues[-1] <= 0
    finally:
        watch.awake(sleeper)
        watch.unsubscribe()


BACKEND_ID = {"postgresql": "SELECT pg_backend_pid()", "mysql": "SELECT CONNECTION_ID()"}
KILL = {"postgresql": "SELECT pg_terminate_backend(%s)", "mysql": "KILL %s"}


# A pickup's side ----------------------------------------------------------------------


class State:
    stopping = False

    def __init__(self) -> None:
        self.wake = threading.Event()


def sleeping_pickup() -> Pickup:
    """A pickup in its first sleep, one the watch looks for, ending in an hour."""
    pickup = Pickup(Database("unused"), "q", State(), poll_seconds=3600)
    pickup.sleep_number, pickup.sleeping = 1, True
    pickup.deadline = time.monotonic() + 3600
    return pickup


def test_a_due_job_seen_by_the_watch_ends_the_sleep():
    pickup = sleeping_pickup()
    pickup.seen(-0.5, 1)
    assert pickup._wait(at_rate=False, check=0.05) == CHANGED


def test_a_job_due_before_the_sleep_ends_moves_its_end():
    pickup = sleeping_pickup()
    pickup.seen(0.3, 1)
    assert pickup.deadline < time.monotonic() + 1
    assert pickup.ends_as == SCHEDULED
    assert pickup._wait(at_rate=False, check=0.05) == SCHEDULED


def test_a_moved_end_that_passed_before_the_wait_still_ends_as_scheduled():
    pickup = sleeping_pickup()
    pickup.seen(0.001, 1)
    time.sleep(0.01)
    assert pickup._wait(at_rate=False, check=0.05) == SCHEDULED


def test_a_due_job_seen_after_a_moved_end_still_ends_the_sleep_at_once():
    pickup = sleeping_pickup()
    pickup.seen(2.0, 1)  # a job due later: the end moves
    pickup.seen(-0.1, 1)  # then a job due now (on SQLite, said once)
    assert pickup._wait(at_rate=False, check=0.05) == CHANGED  # not SCHEDULED, 2 s later


def test_a_job_due_after_the_sleep_ends_changes_nothing():
    pickup = sleeping_pickup()
    deadline = pickup.deadline
    pickup.seen(7200, 1)
    assert pickup.deadline == deadline
    assert not pickup.event.is_set()


def test_what_the_watch_read_for_an_earlier_sleep_says_nothing():
    pickup = sleeping_pickup()
    pickup.seen(-1, 0)  # read during sleep 0, which ended
    pickup.sleeping = False
    pickup.seen(-1, 1)  # read during sleep 1, which ended too
    assert pickup.reason is None and not pickup.event.is_set()


def test_a_pickup_that_checks_subscribes_to_the_watch_and_leaves_it(monkeypatch):
    database = Database("watch-pickup")
    database.store = type("Store", (), {"vendor": "mysql"})()
    monkeypatch.setattr(pickup_module, "can_listen", lambda using: False)
    with Pickup(database, "q", State(), poll_seconds=3600) as pickup:
        assert pickup.watch is Watch._watches["watch-pickup"]
    assert "watch-pickup" not in Watch._watches
