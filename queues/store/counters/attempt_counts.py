"""Failed attempts per queue, minute (UTC) and the job's status after the attempt
(`AttemptCount`), kept by a trigger on every insert into the error history, so the history's
failures and retries stay cheap however many attempts failed. Never taken back; pruned with
the completions. On SQLite the trigger is off while migrations run. See docs/design/counters.md."""

from __future__ import annotations

from datetime import datetime

from django.db import connections, transaction

from queues.store.catalogue import run
from queues.store.counters.completions import minute_of


def install_attempt_counts(connection, since: datetime) -> None:
    """Install the trigger and count the history from `since` on (in a migration)."""
    run(connection, "drop_attempt_counts")
    run(connection, "install_attempt_counts")
    _recount(connection, since)


def drop_attempt_counts(connection) -> None:
    run(connection, "drop_attempt_counts")


def recount(since: datetime, using: str = "default") -> None:
    """Rebuild the counts from the error history: the minutes from `since` on, and none
    before. Writers must be stopped: an attempt committed while this runs could be counted
    twice. The history of deleted jobs is gone and is not counted."""
    with transaction.atomic(using=using):
        _recount(connections[using], since)


def off_while_migrating(sender, using: str = "default", **kwargs) -> None:
    """pre_migrate: on SQLite, take the trigger off (see docs/design/counters.md)."""
    connection = connections[using]
    if connection.vendor == "sqlite":
        run(connection, "drop_attempt_counts")


def back_after_migrating(sender, using: str = "default", **kwargs) -> None:
    """post_migrate: on SQLite, put the trigger back if its tables are there (not after a
    migration back to before 0017)."""
    connection = connections[using]
    if connection.vendor != "sqlite":
        return
    tables = set(connection.introspection.table_names())
    if {"queues_attemptcount", "queues_failedattempt", "queues_job"} <= tables:
        run(connection, "drop_attempt_counts")
        run(connection, "install_attempt_counts")


def _recount(connection, since: datetime) -> None:
    run(
        connection,
        "recount_attempts",
        {"since": connection.ops.adapt_datetimefield_value(minute_of(since))},
    )
