"""What `manage.py jobs` prints: jobs and attempts as JSON objects (every field) or as rows
of a plain table, and progress on long runs (to stderr, so that stdout stays parseable).
See docs/design/cli.md."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence

from django.core.serializers.json import DjangoJSONEncoder
from django.db import models

#: The table's columns of a job list.
LIST_COLUMNS = ("id", "queue_name", "status", "priority", "attempts", "created_at", "error")
ERROR_WIDTH = 40


def fields_of(row: models.Model) -> dict:
    """Every stored field of a row, by attribute name (`batch_id`, not `batch`)."""
    return {f.attname: getattr(row, f.attname) for f in row._meta.concrete_fields}


def dumps(value) -> str:
    """JSON with ids and times as strings, durations in ISO 8601 (Django's encoder)."""
    return json.dumps(value, cls=DjangoJSONEncoder, indent=2, ensure_ascii=False)


def cell(value) -> str:
    if value is None:
        return "-"
    if hasattr(value, "isoformat"):
        return value.isoformat(timespec="seconds")
    text = " ".join(str(value).split())  # one line: an error message may hold newlines
    return text if len(text) <= ERROR_WIDTH else text[: ERROR_WIDTH - 1] + "…"


def table(columns: Sequence[str], rows: Sequence[Sequence]) -> str:
    """A plain table: a header, and each value left-aligned under it."""
    cells = [[cell(value) for value in row] for row in rows]
    widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(columns)]
    lines = [[c.upper() for c in columns], *cells]
    return "\n".join(
        "  ".join(v.ljust(w) for v, w in zip(line, widths, strict=True)).rstrip() for line in lines
    )


def job_row(job) -> list:
    return [
        job.id,
        job.queue_name,
        job.status,
        job.priority,
        job.attempts,
        job.created_at,
        job.error_message,
    ]


class Progress:
    """Counts written to stderr at most once a second (and once more at the end), so that a
    long run shows it is moving without flooding a terminal or a log."""

    def __init__(self, stream, label: str, every: float = 1.0) -> None:
        self.stream = stream
        self.label = label
        self.every = every
        self.started = time.monotonic()
        self.last = self.started
        self.shown = ""

    def note(self, text: str, *, last: bool = False) -> None:
        now = time.monotonic()
        if last or now - self.last >= self.every:
            self.last = now
            self.shown = text
            self.stream.write(f"{self.label}: {text} ({now - self.started:.1f} s)")

    def done(self, text: str) -> None:
        # Only once something was shown: a short run prints its summary on stdout alone.
        if self.shown and self.shown != text:
            self.note(text, last=True)
