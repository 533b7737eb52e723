"""Error groups: the failed attempts of a window grouped by exception class and normalized
message (ids, numbers, quoted values and addresses stripped), each with its count, first and
last seen, its counts per bucket for a chart, the queues it hits and a sample attempt.
Bounded: it reads the newest `ROW_CAP` attempts of the window along the `failed_at` index,
a few columns each, and the sample tracebacks by primary key. See docs/design/reads.md."""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache

from django.db.models.functions import Substr

from queues.models import FailedAttempt
from queues.reads.trends import DEFAULT_WINDOW, WINDOWS, Window

__all__ = ["DEFAULT_WINDOW", "WINDOWS", "ErrorGroup", "Groups", "groups", "normalize"]

#: The most attempts a page reads (the newest of the window): its cost, whatever the table.
ROW_CAP = 5_000
#: The most groups shown; their samples are read by primary key.
SHOWN = 50
#: The job ids a group keeps for "retry all in this group" (the newest of the window).
RETRY_CAP = 1000
#: A group is "growing" when its second half-window has this many times its first's, and
#: at least `GROWING_MIN` attempts.
GROWING_RATIO, GROWING_MIN = 2, 5
#: How long a normalized message may be (the rest is cut), and how much of each error is
#: read for it (an error may hold 64 KiB; its first line is what is grouped).
MESSAGE_CHARS, READ_CHARS = 200, 300

# Order matters: the longer shapes go first, so a UUID is not read as numbers.
_PATTERNS = [
    (re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"),
     "<id>"),
    (re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b"), "<email>"),
    (re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://\S+"), "<url>"),
    (re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b"), "<ip>"),
    (re.compile(r"\b0x[0-9a-fA-F]+\b"), "<addr>"),
    (re.compile(r"'[^'\n]*'|\"[^\"\n]*\"|`[^`\n]*`"), "<value>"),
    (re.compile(r"\b[0-9a-fA-F]{12,}\b"), "<hex>"),
    (re.compile(r"(?<![A-Za-z])-?\d+(?:[.,]\d+)*"), "<n>"),
]  # fmt: skip


@lru_cache(maxsize=4096)
def normalize(message: str | None) -> str:
    """The message's first line with its variable parts replaced: errors that differ only
    in an id, a number, a quoted value or an address fall into one group."""
    text = (message or "").strip().split("\n", 1)[0]
    for pattern, placeholder in _PATTERNS:
        text = pattern.sub(placeholder, text)
    return " ".join(text.split())[:MESSAGE_CHARS]


def fingerprint(exception_class: str, message: str) -> str:
    """A group's short stable name, for a URL (its class and normalized message hashed)."""
    return hashlib.sha256(f"{exception_class}\x1f{message}".encode()).hexdigest()[:16]


@dataclass
class ErrorGroup:
    exception_class: str
    message: str
    key: str
    count: int = 0
    first_seen: datetime | None = None
    last_seen: datetime | None = None
    queues: Counter = field(default_factory=Counter)
    #: Attempts per bucket of the window, oldest first.
    buckets: list[int] = field(default_factory=list)
    #: The newest attempt's id, message and traceback (read for the shown groups only).
    sample_id: int | None = None
    sample_error: str = ""
    sample_traceback: str = ""
    #: The jobs of its attempts, newest first (the first `RETRY_CAP`), as dict keys.
    job_ids: dict = field(default_factory=dict)
    new: bool = False
    growing: bool = False

    @property
    def queue_counts(self) -> list[tuple[str, int]]:
        """(queue, attempts), most first (a template cannot call a Counter's method)."""
        return self.queues.most_common()

    @property
    def label(self) -> str:
        return f"{self.exception_class or 'Error'}: {self.message}"


@dataclass
class Groups:
    window: Window
    start: datetime
    end: datetime
    groups: list[ErrorGroup]
    #: Attempts read (at most `ROW_CAP`); `capped`: the window held more, the oldest unread.
    read: int
    capped: bool
    #: When the oldest attempt read failed (where the reading stopped, if capped).
    read_from: datetime | None

    @property
    def notable(self) -> list[ErrorGroup]:
        return [g for g in self.groups if g.new or g.growing]


def groups(
    window: Window, now: datetime, using: str = "default", *, key: str | None = None
) -> Groups:
    """The error groups of the `window` that ends at `now`, most attempts first (the first
    `SHOWN`; with `key`, that group only)."""
    start = now - window.span
    rows = (
        FailedAttempt.objects.using(using)
        .filter(failed_at__gte=start, failed_at__lte=now)
        .order_by("-failed_at")
        .annotate(head=Substr("error", 1, READ_CHARS))
        .values_list("id", "exception_class", "head", "failed_at", "job_id", "job__queue_name")
    )[: ROW_CAP + 1]
    rows = list(rows)
    capped = len(rows) > ROW_CAP
    rows = rows[:ROW_CAP]
    found = _group(rows, window, start, now)
    if key is not None:
        found = {key: found[key]} if key in found else {}
    ordered = sorted(found.values(), key=lambda g: (-g.count, g.label))[:SHOWN]
    _samples(ordered, using)
    read_from = rows[-1][3] if rows else None
    return Groups(window, start, now, ordered, len(rows), capped, read_from)


def _group(rows, window: Window, start: datetime, now: datetime) -> dict[str, ErrorGroup]:
    """The rows (newest first) grouped, with their buckets and their new or growing mark."""
    found: dict[tuple[str, str], ErrorGroup] = {}
    size = max(window.buckets, 1)
    middle = start + window.span / 2
    halves: dict[str, list[int]] = {}
    for attempt_id, cls, error, failed_at, job_id, queue_name in rows:
        key = (cls or "", normalize(error))
        group = found.get(key)
        if group is None:
            group = found[key] = ErrorGroup(*key, fingerprint(*key), buckets=[0] * size)
            group.last_seen, group.sample_id = failed_at, attempt_id
            halves[key] = [0, 0]
        group.count += 1
        group.first_seen = failed_at
        group.queues[queue_name] += 1
        index = min(int((failed_at - start) / window.span * size), size - 1)
        group.buckets[max(index, 0)] += 1
        halves[key][failed_at >= middle] += 1
        if len(group.job_ids) < RETRY_CAP:
            group.job_ids.setdefault(job_id)
    for key, group in found.items():
        early, late = halves[key]
        group.new = early == 0 and group.first_seen >= middle
        group.growing = not group.new and late >= GROWING_MIN and late >= GROWING_RATIO * early
    return {group.key: group for group in found.values()}


def _samples(shown: list[ErrorGroup], using: str) -> None:
    """Each shown group's newest attempt: its message and traceback, one read by key."""
    ids = [g.sample_id for g in shown if g.sample_id is not None]
    rows = FailedAttempt.objects.using(using).filter(id__in=ids)
    samples = {a: (e, t) for a, e, t in rows.values_list("id", "error", "traceback")}
    for group in shown:
        group.sample_error, group.sample_traceback = samples.get(group.sample_id, ("", ""))
        group.sample_error, group.sample_traceback = (group.sample_error or "",
                                                      group.sample_traceback or "")  # fmt: skip


def find(window: Window, now: datetime, key: str, using: str = "default") -> ErrorGroup | None:
    """The group of `key` in the window (None: no such group now)."""
    found = groups(window, now, using, key=key).groups
    return found[0] if found else None


def window_of(text: str) -> Window:
    """The window a query names; anything else is the default."""
    return WINDOWS.get(text or "", WINDOWS[DEFAULT_WINDOW])
