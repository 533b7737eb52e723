"""Per-queue limits (`Limits`, mixed into `JobQueue`): `max_running`, the most jobs of a queue
Running at once across every process and host, and `rate` (`rates`), both kept in the
queue's `QueueConfig` row and enforced in the claim, under that row's lock. An unlimited
queue's claim is untouched. See docs/design/engine.md ("Limits and rates").
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import datetime

from queues.engine.core import QueuePart
from queues.engine.rates import check_rate, next_window, tokens_at
from queues.exceptions import InvalidQueueConfig
from queues.models import Job, QueueConfig
from queues.text import storable_label
from queues.validation import validate_queue_name

#: How long a process trusts what it read about whether a queue has a limit (seconds).
REFRESH = 1.0
#: The largest `max_running` (beyond it a limit limits nothing).
MAX_RUNNING = 1_000_000
#: `queue_config(name)` without `max_running`: read, change nothing.
UNCHANGED = object()


def check_max_running(value: object) -> int | None:
    """`max_running` is a whole number from 1 to MAX_RUNNING, or None (no limit)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_RUNNING:
        raise InvalidQueueConfig(
            f"max_running must be a whole number from 1 to {MAX_RUNNING}, or None for no "
            f"limit; not {value!r}"
        )
    return value


class LimitCache:
    """Which queues have a limit, as last read, and when (time.monotonic())."""

    def __init__(self) -> None:
        self._seen: dict[str, tuple[bool, float]] = {}

    def limited(self, store, queue: str) -> bool:
        seen = self._seen.get(queue)
        now = time.monotonic()
        if seen is None or now - seen[1] >= REFRESH:
            seen = (limits_claims(store.get_queue_config(queue)), now)
            self._seen[queue] = seen
        return seen[0]

    def note(self, queue: str, limited: bool) -> None:
        self._seen[queue] = (limited, time.monotonic())


def limits_claims(row: QueueConfig | None) -> bool:
    """Whether a config row limits the claims of its queue (a limit or a rate)."""
    return row is not None and (row.max_running is not None or row.rate is not None)


_SHARED: dict[str, LimitCache] = {}
_SHARED_LOCK = threading.Lock()


def shared_cache(using: str) -> LimitCache:
    """The process's cache for a database alias: every `JobQueue` of the alias sees a limit
    that one of them set at once."""
    with _SHARED_LOCK:
        return _SHARED.setdefault(using, LimitCache())


class Limits(QueuePart):
    """`JobQueue`'s limits: the configuration call and the limited claim."""

    _limit_cache: LimitCache
    #: The limit each queue's last claim stopped at (by this queue object), if it did.
    _stopped_at: dict[str, int]
    #: When the next window of each queue's rate opens, if its last claim ran out of tokens.
    _rate_until: dict[str, object]

    def _setup_limits(self, cache: LimitCache) -> None:
        """The state of a new queue object: what it knows of which queues have a limit
        (`cache`: the process's, shared by the queues of a database alias, or its own)."""
        self._limit_cache = cache
        self._stopped_at = {}
        self._rate_until = {}

    def queue_config(
        self,
        queue_name: str,
        *,
        max_running=UNCHANGED,
        rate=UNCHANGED,
        updated_by: str | None = None,
    ) -> QueueConfig:
        """The queue's configuration; with `max_running` (None: no limit) or `rate` (jobs,
        per seconds; None: no rate), set them first. What is not named stays as it was; a
        rate set anew starts with a full bucket. A bad value writes nothing."""
        validate_queue_name(queue_name)
        fields: dict[str, object] = {}
        if max_running is not UNCHANGED:
            fields["max_running"] = check_max_running(max_running)
        if rate is not UNCHANGED:
            jobs, period = check_rate(rate) or (None, None)
            fields.update(rate_limit=jobs, rate_period=period, rate_tokens=jobs or 0)
            fields["rate_refilled_at"] = None  # refilled by the next claim
        store = self.store
        if not fields:
            found = store.get_queue_config(queue_name)
            return found if found is not None else QueueConfig(queue_name=queue_name)
        fields.update(updated_at=self.now(), updated_by=storable_label(updated_by))
        row = store.set_queue_config(queue_name, fields)
        self._limit_cache.note(queue_name, limits_claims(row))
        return row

    def at_limit(self, queue_name: str) -> int | None:
        """The queue's limit if this queue object's last claim of it was cut short by the
        limit (its workers then wait for a running job to end), else None."""
        return self._stopped_at.get(queue_name)

    def at_rate(self, queue_name: str):
        """When the queue's next window opens if this queue object's last claim of it was
        cut short by its rate (its bucket empty), else None."""
        return self._rate_until.get(queue_name)

    def is_limited(self, queue_name: str) -> bool:
        """Whether the queue has a limit, as this process last read it (at most a second
        ago; no read more often)."""
        return self._is_limited(queue_name)

    def _is_limited(self, queue_name: str) -> bool:
        limited = self._limit_cache.limited(self.store, queue_name)
        if not limited:
            self._stopped_at.pop(queue_name, None)
            self._rate_until.pop(queue_name, None)
        return limited

    def _claim_within_limit(
        self, queue_name: str, wanted: int, claim: Callable[[int, datetime], list[Job]]
    ) -> list[Job]:
        """`claim(n, now)` for as many of `wanted` as the limit and the rate leave room for;
        inside the caller's transaction, which holds the config row's lock until it ends.
        `now` is read once the lock is held: the window the claim spends from is the one
        its jobs are claimed (and, on PostgreSQL, started) in, however long it waited."""
        store = self.store
        config = store.lock_queue_limit(queue_name)
        now = self.now()
        self._stopped_at.pop(queue_name, None)
        self._rate_until.pop(queue_name, None)
        if not limits_claims(config):  # removed since it was read
            self._limit_cache.note(queue_name, False)
            return claim(wanted, now)
        limit = config.max_running
        room = wanted if limit is None else limit - store.count_running(queue_name)
        if config.rate is not None:
            tokens, window = tokens_at(config, now)
            room = min(room, tokens)
        claimed = claim(min(wanted, room), now) if room > 0 else []
        stopped = room < wanted and len(claimed) == max(room, 0)
        if config.rate is not None:
            left = tokens - len(claimed)
            if (left, window) != (config.rate_tokens, config.rate_refilled_at):
                store.spend_rate_tokens(queue_name, left, window)
            if stopped and left == 0:
                self._rate_until[queue_name] = next_window(config, now)
                return claimed
        if stopped and limit is not None:
            self._stopped_at[queue_name] = limit
        return claimed
