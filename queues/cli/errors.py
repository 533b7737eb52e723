"""`manage.py jobs errors`: the error groups of a window (`queues.reads.error_groups`), the
dashboard's Errors page on the command line: each group's class, normalized message, count,
first and last seen and queues; `--json` for every field and a sample. Reads only; the retry
of a group is `jobs retry` of its job ids, or the page's button. See docs/design/cli.md."""

from __future__ import annotations

from django.core.management.base import CommandError
from django.utils import timezone

from queues.cli import output
from queues.reads import error_groups


def errors(command, queue, options) -> None:
    key = options.get("window") or error_groups.DEFAULT_WINDOW
    if key not in error_groups.WINDOWS:
        raise CommandError(f"--window is one of {', '.join(error_groups.WINDOWS)}")
    found = error_groups.groups(error_groups.WINDOWS[key], timezone.now(), queue.using)
    if options["json"]:
        command.stdout.write(output.dumps([_fields(g) for g in found.groups]))
        return
    columns = ("count", "class", "message", "first_seen", "last_seen", "queues", "trend")
    rows = [
        [g.count, g.exception_class or "-", g.message, g.first_seen, g.last_seen,
         ", ".join(name for name, _ in g.queues.most_common(3)),
         "new" if g.new else "growing" if g.growing else ""]
        for g in found.groups
    ]  # fmt: skip
    command.stdout.write(output.table(columns, rows) if rows else "no failed attempts")
    read = f"{found.read} attempts read, the {found.window.label}"
    if found.capped:
        read += f" (the newest {error_groups.ROW_CAP}, back to {output.cell(found.read_from)})"
    command.stdout.write(read)


def _fields(group: error_groups.ErrorGroup) -> dict:
    return {
        "key": group.key, "exception_class": group.exception_class, "message": group.message,
        "count": group.count, "first_seen": group.first_seen, "last_seen": group.last_seen,
        "queues": dict(group.queues), "new": group.new, "growing": group.growing,
        "job_ids": list(group.job_ids), "sample_error": group.sample_error,
        "sample_traceback": group.sample_traceback,
    }  # fmt: skip
