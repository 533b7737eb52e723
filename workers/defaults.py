"""The defaults of a worker's settings, each written once: `Worker`, `ProcessSettings` and
`runworker`'s options (and their help text) read them here. The lease and the maintenance
intervals belong to the queue app, which never imports `workers`: they are re-used from it.
Why each value: docs/howto/deploy.md, "What each setting costs"."""

from __future__ import annotations

from datetime import timedelta

from queues.ops.maintenance import DEFAULT_PRUNE_AFTER as PRUNE_AFTER
from queues.ops.maintenance import DEFAULT_PRUNE_INTERVAL as PRUNE_INTERVAL
from queues.ops.maintenance import DEFAULT_REAPER_INTERVAL as REAPER_INTERVAL
from queues.options import DEFAULT_LEASE as LEASE

#: Jobs claimed at once per queue: one claim statement for ten jobs, yet few jobs held
#: (leased, not yet running) where other processes cannot take them.
BATCH_SIZE = 10
#: Handlers run at once per queue: one, safe for handlers never written for concurrency.
CONCURRENCY = 1
#: The longest an idle queue waits between claims: one claim a second per process; the
#: pickup signals (NOTIFY, data_version, next_due) usually wake it much sooner.
POLL_INTERVAL = timedelta(seconds=1)
#: How long a stop waits for running handlers: room for ordinary jobs, well under
#: systemd's 90 s stop timeout.
GRACE_PERIOD = timedelta(seconds=30)
#: How often, while handlers run, one read asks whether their runs were taken away: a
#: cancel reaches a handler within about a second, for one cheap read a second.
CANCEL_CHECK_INTERVAL = timedelta(seconds=1)
#: How often a process refreshes its `WorkerProcess` row: the dashboard's counts stay
#: fresh, far inside the ten minutes after which the pruner deems the process dead.
HEARTBEAT_INTERVAL = timedelta(seconds=5)
#: How often a busy process logs its progress: a line that moves, not a flood.
PROGRESS_INTERVAL = timedelta(seconds=10)

__all__ = [
    "BATCH_SIZE",
    "CANCEL_CHECK_INTERVAL",
    "CONCURRENCY",
    "GRACE_PERIOD",
    "HEARTBEAT_INTERVAL",
    "LEASE",
    "POLL_INTERVAL",
    "PROGRESS_INTERVAL",
    "PRUNE_AFTER",
    "PRUNE_INTERVAL",
    "REAPER_INTERVAL",
]
