"""Health checks of the queues, for probes and cron: does the database answer, is a queue
backing up (too many jobs waiting, or its oldest due job waiting too long), has a queue no
live worker. Each check returns problems, one sentence each: none is healthy. The reads are
those of the metrics (`queues.ops.metrics`). See docs/design/maintenance.md."""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import DatabaseError, connections
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.recorder import MigrationRecorder
from django.utils import timezone

from queues.enums import JobStatus
from queues.models import WorkerProcess
from queues.reads import stats
from queues.store.counters.counts import counts_by_queue


def database_problem(using: str = "default") -> str | None:
    """None if the database `using` answers a query, else what went wrong (one line)."""
    try:
        with connections[using].cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except DatabaseError as exc:
        connections[using].close()  # a broken connection must not be reused
        return f"database {using!r} does not answer: {first_line(exc)}"
    return None


def unapplied_migrations(using: str = "default") -> list[str]:
    """The names of Hammerweb's migrations that the database `using` has not applied (all
    of them on a database never migrated): one query, without loading the migration graph.
    A squashed migration counts as applied once everything it replaces is. A connection
    fault is raised for the caller to retry."""
    module = MigrationLoader.migrations_module("queues")[0]
    package = importlib.import_module(module)
    names = {
        found.name
        for found in pkgutil.iter_modules(package.__path__)
        if not found.ispkg and not found.name.startswith(("_", "~"))  # as Django's loader
    }
    recorder = MigrationRecorder(connections[using])
    if not recorder.has_table():
        return sorted(names)
    applied = {name for app, name in recorder.applied_migrations() if app == "queues"}
    missing = []
    for name in sorted(names - applied):
        migration = importlib.import_module(f"{module}.{name}").Migration
        replaced = {old for app, old in getattr(migration, "replaces", []) if app == "queues"}
        if not replaced or not replaced <= applied:
            missing.append(name)
    return missing


def first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


@dataclass(frozen=True)
class Thresholds:
    """What counts as unhealthy; None: not checked."""

    #: The most Pending jobs a queue may have.
    max_backlog: int | None = None
    #: The longest a due job may wait to be claimed.
    max_due_age: timedelta | None = None
    #: Every checked queue must be worked by a live worker process.
    require_worker: bool = False


def queue_problems(
    thresholds: Thresholds,
    queues: list[str] | None = None,
    now: datetime | None = None,
    using: str = "default",
) -> list[str]:
    """The problems of `queues` (None: every queue that has jobs)."""
    now = now or timezone.now()
    counts = counts_by_queue(using)
    names = sorted(counts) if queues is None else list(queues)
    pending = {name: counts.get(name, {}).get(JobStatus.PENDING, 0) for name in names}
    found = []
    limit = thresholds.max_backlog
    if limit is not None:
        found += [
            f"queue {name}: {n} jobs pending (at most {limit} allowed)"
            for name, n in pending.items()
            if n > limit
        ]
    if thresholds.max_due_age is not None:
        waiting = [name for name in names if pending[name]]
        for name, due in sorted(stats.oldest_due(waiting, now).items()):
            age = now - due
            if age > thresholds.max_due_age:
                found.append(
                    f"queue {name}: its oldest due job has waited {age.total_seconds():.0f}s "
                    f"(at most {thresholds.max_due_age.total_seconds():g}s allowed)"
                )
    if thresholds.require_worker:
        # Without a list, the queues that have work waiting: an idle queue needs nobody.
        needed = names if queues is not None else [name for name in names if pending[name]]
        worked = worked_queues(now, using)
        found += [f"queue {name}: no live worker process" for name in needed if name not in worked]
    return found


def worked_queues(now: datetime, using: str = "default") -> set[str]:
    """The queues of the worker processes that heartbeat lately."""
    rows = WorkerProcess.objects.using(using).filter(
        last_heartbeat_at__gte=now - stats.WORKER_STALE_AFTER
    )
    return {name for queues in rows.values_list("queues", flat=True) for name in queues or []}
