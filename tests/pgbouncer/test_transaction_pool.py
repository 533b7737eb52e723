"""Through PgBouncer in transaction mode with the default settings: the pooler is detected
(one warning line naming the setting), the engine prepares nothing and nothing LISTENs; an
idle `runworker` (a child process) picks new work up by polling. Declared absent, a shared
prepared statement is one typed error naming the setting."""

from __future__ import annotations

import logging

import pytest
from django.db import connection, connections
from django.db.backends.postgresql.base import DatabaseWrapper

from queues.api import Job, JobQueue, JobStatus
from queues.exceptions import TransactionPoolingError
from queues.store import listen
from queues.store.sql import session
from tests.workers.runworker.test_pickup import IdleWorker
from tests.workers.support.helpers import wait_until
from tests.workers.support.subprocess_jobs import WORK_QUEUE

pytestmark = pytest.mark.django_db(transaction=True)
SETTING = "HAMMERWEB['PG_TRANSACTION_POOLING'] = True"


@pytest.fixture
def queues_log(caplog):
    """The `queues` logger's records (it does not propagate to the root's handler)."""
    logger = logging.getLogger("queues")
    logger.addHandler(caplog.handler)
    yield caplog
    logger.removeHandler(caplog.handler)


def test_the_pooler_is_detected_once_per_server_and_named_in_one_line(queues_log, monkeypatch):
    monkeypatch.setattr(session, "_detected", {})
    assert session.transaction_pooled(connection)
    assert session.transaction_pooled(connection)  # remembered: one line
    warnings = [r.getMessage() for r in queues_log.records if r.name == "queues"]
    assert len(warnings) == 1 and SETTING in warnings[0] and "\n" not in warnings[0]

    # The same server without the pooler in between: nothing to change there.
    direct = DatabaseWrapper({**connection.settings_dict, "PORT": "5432"}, alias="direct")
    try:
        assert not session.transaction_pooled(direct)
    finally:
        direct.close()


def test_what_the_setting_declares_wins_over_detection(settings):
    settings.HAMMERWEB = {"PG_TRANSACTION_POOLING": False}
    assert not session.transaction_pooled(connection)
    settings.HAMMERWEB = {"PG_TRANSACTION_POOLING": True}
    assert session.transaction_pooled(connection)


@pytest.mark.parametrize(
    ("declared", "named"),
    [
        ({"PG_TRANSACTION_POOLING": False}, SETTING),
        ({"PG_PREPARE": True}, "HAMMERWEB['PG_PREPARE'] = False"),  # a pooler that keeps them
    ],
)
def test_declared_wrong_a_shared_prepared_statement_is_one_typed_error(settings, declared, named):
    settings.HAMMERWEB = declared
    clients = [connections.create_connection("default") for _ in range(2)]
    try:
        # The first prepares its statement as _pg3_0 on the pool's server session; the pool
        # hands that session to the next client (last used, first given), whose own first
        # statement is _pg3_0 too. (A session an earlier test left one on stops the first.)
        with pytest.raises(TransactionPoolingError) as caught:
            for client in clients:
                with session.server_cursor(client) as cursor:
                    cursor.execute("SELECT 1")
    finally:
        for client in clients:
            client.close()
    message = str(caught.value)
    assert message.endswith(f"set {named}") and "\n" not in message


def test_the_default_prepares_nothing_so_clients_share_the_pool():
    clients = [connections.create_connection("default") for _ in range(3)]
    try:
        for _ in range(3):
            for client in clients:
                with session.server_cursor(client) as cursor:
                    cursor.execute("SELECT 1")
                    assert cursor.fetchone() == (1,)
    # (Prepared, the second client would have met the first's _pg3_0 on the session the
    # pool gave it next.)
    finally:
        for client in clients:
            client.close()


def test_the_live_push_listener_ends_without_listening():
    assert not listen.can_listen("default")
    listener = listen.Listener(lambda: None)
    listener.start()
    listener.join(30)
    assert not listener.is_alive(), "the listener hangs"
    assert not listener.listening.is_set()


def test_an_idle_runworker_polls_and_picks_new_work_up(tmp_path):
    worker = IdleWorker(tmp_path)  # poll interval 60 s: the checks must find the job
    try:
        worker.wait_idle()
        (job_id,) = JobQueue().enqueue_many([Job(queue_name=WORK_QUEUE)])
        wait_until(
            lambda: JobQueue().get_job(job_id).status == JobStatus.COMPLETED,
            60,
            f"the job was not picked up:\n{worker.text()}",
        )
        text = worker.text()
        assert "woken (changed)" in text and "woken (notify)" not in text, text
        assert "not listening for new jobs yet" not in text, text  # no wait for a LISTEN
        assert SETTING in text  # the one line of the default settings
    finally:
        worker.stop()
