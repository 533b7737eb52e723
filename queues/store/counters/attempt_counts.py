"""Failed attempts per queue, minute and status, so that the history's failures and retries
stay cheap to read when an incident writes a million rows of error history.

A database trigger (`install_attempt_counts` in each vendor's SQL catalogue) adds to an
`AttemptCount` row in the transaction of every insert into the error history
(`FailedAttempt`), whoever writes it: a worker whose handler failed, the reaper's and the
lifeline's rescues, an operator's action on a running job, plain SQL. The row is counted in
the minute (UTC) of its `failed_at`, under the job's queue and the job's status after the
attempt, and never taken back (deleting a job, or pruning the history, leaves what happened
counted). A queue's count of a minute and status therefore equals
``COUNT(*) ... FROM queues_failedattempt JOIN queues_job ... GROUP BY queue, minute, status``
as long as no job with history is deleted or moved to another queue.

Why the status and not "failed"/"retried": which statuses are a failure and which a retry is the
history's rule (`queues.store.counters.rollup`), written once there; the triggers only count. Why a
trigger on the history and not on the jobs' status changes: a retry is an attempt that failed and
comes again, and only the history row tells it from a reschedule without error or an operator's
retry of a job that had already failed (no attempt ended); the history row is written in the same
transaction as the status, so counting it is as exact.

The history (`queues.store.counters.rollup`) reads these rows; the pruner (`queues.ops.maintenance`)
deletes the minutes older than `queues.store.counters.completions.KEPT`, as it does the
completions'.

On SQLite the trigger is off while migrations run (`off_while_migrating`): SQLite alters a
table by rebuilding it, and refuses to rename the rebuilt jobs table into place while a
trigger of another table names it ("error in trigger queues_failedattempt_count: no such
table"), so any later migration that altered `Job` would fail. Writers are stopped during
a migration, so nothing goes uncounted.
"""

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
    """pre_migrate: on SQLite, take the trigger off (see the module's docstring)."""
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
