"""benchqueue's count of the statements a process sends: each execute (each parameter set of
an executemany), and the transaction control its driver sends on its own, as the server sees
them (on MariaDB the server's own count of the session's statements checks it)."""

from __future__ import annotations

import pytest
from django.db import connection, connections, transaction

from hammerweb.measure.benchmark import statements

pytestmark = pytest.mark.django_db(transaction=True)

#: An atomic block of two statements: psycopg's BEGIN and COMMIT around them; Django's BEGIN
#: (an execute) and SQLite's COMMIT; mysqlclient's COMMIT and `SET autocommit` before and
#: after.
ATOMIC_OF_TWO = {"postgresql": 4, "sqlite": 4, "mysql": 5}


@pytest.fixture
def counted():
    """This test's connection counted (and as it was afterwards)."""
    own = connections["default"]
    own.ensure_connection()
    wrappers = own.execute_wrappers
    own.execute_wrappers = []
    statements._instrument(None, own)
    statements._instrument(None, own)  # as at a reconnect: counted once all the same
    with own.cursor() as cursor:
        cursor.execute("CREATE TEMPORARY TABLE counted_rows (n integer)")
    yield own
    own.execute_wrappers = wrappers
    for name in (
        *("_commit", "_rollback", "_set_autocommit", "connect"),
        *(statements._MARK, statements._CONNECTING),
    ):
        own.__dict__.pop(name, None)  # the class's own again
    with own.cursor() as cursor:
        cursor.execute("DROP TABLE counted_rows")


def _sent_by(block) -> int:
    before = statements.counted()
    block()
    return statements.counted() - before - 1  # the first `counted()` is a step of its own


def _questions() -> int:
    """MariaDB's count of this session's statements (the read itself included)."""
    with connection.cursor() as cursor:
        cursor.execute("SHOW SESSION STATUS LIKE 'Questions'")
        return int(cursor.fetchone()[1])


def _executes():
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.executemany("INSERT INTO counted_rows (n) VALUES (%s)", [(1,), (2,)])


def _atomic():
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("INSERT INTO counted_rows (n) VALUES (3)")
        cursor.execute("SELECT COUNT(*) FROM counted_rows")


def test_each_execute_and_each_parameter_set_is_a_statement(counted):
    server_before = _questions() if counted.vendor == "mysql" else None
    # mysqlclient sends an executemany of an INSERT as one INSERT of many rows.
    assert _sent_by(_executes) == (2 if counted.vendor == "mysql" else 3)
    if server_before is not None:
        assert _questions() - server_before == 2 + 1  # and the read's own


def test_a_transaction_counts_what_its_driver_sends_around_it(counted):
    server_before = _questions() if counted.vendor == "mysql" else None
    assert _sent_by(_atomic) == ATOMIC_OF_TWO[counted.vendor]
    if server_before is not None:
        assert _questions() - server_before == ATOMIC_OF_TWO["mysql"] + 1


def test_an_empty_transaction_sends_what_its_driver_sends(counted):
    def empty():
        with transaction.atomic():
            pass

    # psycopg sends nothing; Django's BEGIN on SQLite makes a transaction to commit; MariaDB
    # gets its autocommit switches and COMMIT all the same.
    assert _sent_by(empty) == {"postgresql": 0, "sqlite": 2, "mysql": 3}[counted.vendor]


def test_a_reconnect_counts_nothing_of_its_own_set_up(counted):
    def reconnect():
        counted.close()
        counted.connect()  # Django's set-up again (on MariaDB its SET autocommit among it)

    assert _sent_by(reconnect) == 0
    with counted.cursor() as cursor:
        cursor.execute("CREATE TEMPORARY TABLE counted_rows (n integer)")  # gone with the close
    assert _sent_by(_executes) == (2 if counted.vendor == "mysql" else 3)


def test_a_callers_execute_wrapper_leaves_the_count_in_place(counted):
    def callers(execute, sql, params, many, context):
        return execute(sql, params, many, context)

    with counted.execute_wrapper(callers):
        statements._instrument(None, counted)  # as if the connection opened in this block
    assert counted.execute_wrappers == [statements._executed]


def test_the_total_adds_every_process_line(tmp_path):
    path = tmp_path / "statements"
    assert statements.total(path) is None  # no process wrote
    path.write_text("101 40\n102 2\n103\n")  # the last cut short
    assert statements.total(path) == 42
