"""Completions per queue and minute (`CompletionCount`), kept by database triggers in the
transaction of every write that gives a job's `completed_at` a new value, whoever writes it.
Counted in that minute (UTC) and never taken back; read by the throughput and the history,
pruned after `KEPT`. See docs/design/counters.md."""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime, timedelta

from django.db import connections, transaction
from django.db.models import Sum

from queues.models import CompletionCount
from queues.store.catalogue import run

#: How long minutes are kept: the sparkline reads 30 of them; a day keeps "what happened
#: this morning" answerable from the counters (in SQL) and gives the pruner slack.
KEPT = timedelta(days=1)


def minute_of(moment: datetime) -> datetime:
    """The start of the minute (UTC) of `moment`, as the triggers truncate it."""
    return moment.astimezone(UTC).replace(second=0, microsecond=0)


def install_completion_counts(connection, since: datetime) -> None:
    """Install the triggers and count the completions from `since` on (in a migration)."""
    run(connection, "drop_completion_counts")
    run(connection, "install_completion_counts")
    _recount(connection, since)


def drop_completion_counts(connection) -> None:
    run(connection, "drop_completion_counts")


def recount(since: datetime, using: str = "default") -> None:
    """Rebuild the counts from the jobs table (each job's last completion): the minutes from
    `since` on, and none before. Writers must be stopped: a completion committed while this
    runs could be counted twice. The earlier completions of recurring jobs are not in the
    jobs table and are lost."""
    with transaction.atomic(using=using):
        _recount(connections[using], since)


def _recount(connection, since: datetime) -> None:
    run(
        connection,
        "recount_completions",
        {"since": connection.ops.adapt_datetimefield_value(minute_of(since))},
    )


def per_minute(
    names: list[str], first: datetime, last: datetime, using: str = "default"
) -> dict[str, dict[datetime, int]]:
    """{queue: {minute: completions}} of the minutes from `first` to `last` (both starts of
    minutes, inclusive), for the queues `names`; a minute without completions is absent."""
    result: dict[str, dict[datetime, int]] = defaultdict(dict)
    if not names:
        return {}
    rows = (
        CompletionCount.objects.using(using)
        .filter(queue_name__in=names, minute__gte=first, minute__lte=last)
        .order_by()
        .values_list("queue_name", "minute")
        .annotate(total=Sum("n"))
    )
    for queue, minute, n in rows:
        if n:
            result[queue][minute.astimezone(UTC)] = n
    return dict(result)
