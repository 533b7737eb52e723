"""What a queue asks of its store and of the database: for the tests that count the cost of
an operation."""

from __future__ import annotations

from contextlib import contextmanager

from django.db import connection


class Recording:
    """The store, with the name of every operation called on it recorded."""

    def __init__(self, store) -> None:
        self.store, self.calls = store, []

    def __getattr__(self, name):
        attr = getattr(self.store, name)
        if not callable(attr):
            return attr

        def call(*args, **kwargs):
            self.calls.append(name)
            return attr(*args, **kwargs)

        return call


@contextmanager
def recorded(queue):
    """Record the store operations of `queue` and the statements of this thread's
    connection (the catalogue's too: `execute_wrapper` sees every cursor of it) meanwhile:
    yields (operations, statements)."""
    store = queue.store
    statements: list[str] = []
    queue._store = recording = Recording(store)

    def count(execute, sql, *args):
        statements.append(sql)
        return execute(sql, *args)

    try:
        with connection.execute_wrapper(count):
            yield recording.calls, statements
    finally:
        queue._store = store
