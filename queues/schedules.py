"""Schedules declared in settings: each entry of `HAMMERWEB["SCHEDULES"]` (a cron, and a queue
and payload or a django.tasks task) is one recurring job row, found by its name, that
`runworker` (at start) and `manage.py syncschedules` bring in line with the settings.
`queues.checks` validates them at start; a sync is `queues.engine.schedule_sync`'s.
See docs/design/schedules.md."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.utils.module_loading import import_string

from queues import conf
from queues.cron import CronSchedule
from queues.enums import JobPriority
from queues.exceptions import InvalidJob, InvalidSchedule
from queues.models import Job
from queues.tags import check_tags
from queues.validation import (
    MAX_ATTEMPTS,
    check_duration,
    check_json,
    check_meta,
    validate_label,
    validate_queue_name,
)

SETTING = "SCHEDULES"
#: The keys an entry may have.
KEYS = frozenset(
    {"queue", "cron", "timezone", "payload", "priority", "max_attempts", "timeout"}
    | {"tags", "meta", "task", "args", "kwargs"}
)


@dataclass(frozen=True)
class Schedule:
    """One declared schedule, checked."""

    name: str
    queue: str
    cron: str
    timezone: str = "UTC"
    payload: dict = field(default_factory=dict)
    priority: JobPriority = JobPriority.NORMAL
    max_attempts: int = 3
    timeout: timedelta | None = None
    tags: tuple[str, ...] = ()
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        # The rest is checked as any new job's is, when a sync inserts or compares it.
        validate_label(self.name, "a schedule's name", InvalidSchedule)

    def job(self) -> Job:
        """The row this schedule is (checked again when the queue inserts or compares it)."""
        return Job(
            queue_name=self.queue,
            payload=self.payload,
            priority=self.priority,
            max_attempts=self.max_attempts,
            timeout=self.timeout,
            cron_schedule=self.cron,
            timezone=self.timezone,
            schedule_name=self.name,
            tags=list(self.tags),
            meta=self.meta,
        )

    def definition(self) -> dict[str, Any]:
        """The row's columns that the settings decide, as the database stores them."""
        return {
            "queue_name": self.queue,
            "cron_schedule": self.cron,
            "timezone": self.timezone,
            "payload": json.loads(json.dumps(self.payload)),
            "priority": int(self.priority),
            "max_attempts": self.max_attempts,
            "timeout": self.timeout,
            "tags": list(self.tags),
            "meta": json.loads(json.dumps(self.meta)),
        }


def declared(entries: Mapping | None = None) -> list[Schedule]:
    """The schedules of `entries` (default: the settings'), in name order; the first bad
    entry raises `InvalidSchedule`, naming it."""
    entries = _entries(entries)
    return [parse(name, entries[name]) for name in sorted(entries)]


def problems(entries: Mapping | None = None) -> list[str]:
    """What is wrong with each bad entry (for the system check)."""
    try:
        entries = _entries(entries)
    except InvalidSchedule as exc:
        return [str(exc)]
    found = []
    for name in sorted(entries, key=str):
        try:
            parse(name, entries[name])
        except InvalidSchedule as exc:
            found.append(str(exc))
    return found


def _entries(entries: Mapping | None) -> Mapping:
    entries = conf.get(SETTING) if entries is None else entries
    if not isinstance(entries, Mapping):
        raise InvalidSchedule(f"HAMMERWEB[{SETTING!r}] must be a dict of schedules by name")
    return entries


def parse(name: object, entry: object) -> Schedule:
    """One entry, checked: `InvalidSchedule` says what is wrong and names the entry."""
    where = f"HAMMERWEB[{SETTING!r}][{name!r}]"
    try:
        validate_label(name, "a schedule's name", InvalidSchedule)
        if not isinstance(entry, Mapping):
            raise InvalidSchedule("must be a dict")
        unknown = sorted(set(map(str, entry)) - KEYS)
        if unknown:
            raise InvalidSchedule(f"unknown key {unknown[0]!r} (known: {', '.join(sorted(KEYS))})")
        return _schedule(str(name), entry)
    except InvalidJob as exc:  # every refusal of a field is one (a bad queue, cron, zone...)
        raise InvalidSchedule(f"{where}: {exc}") from exc


def _schedule(name: str, entry: Mapping) -> Schedule:
    if "cron" not in entry:
        raise InvalidSchedule("needs a 'cron' expression")
    fields: dict[str, Any] = {"name": name, "cron": entry["cron"]}
    if "task" in entry:
        fields.update(_task_fields(entry))
    elif "queue" not in entry:
        raise InvalidSchedule("needs a 'queue' (or a 'task')")
    elif "args" in entry or "kwargs" in entry:
        raise InvalidSchedule("'args' and 'kwargs' are for a 'task'")
    else:
        fields["payload"] = entry.get("payload", {})
    if "queue" in entry:
        fields["queue"] = validate_queue_name(entry["queue"])
    fields["timezone"] = entry.get("timezone", "UTC")
    schedule = CronSchedule(fields["cron"], fields["timezone"])  # a bad one raises
    fields["timezone"] = schedule.timezone
    check_json(fields.get("payload", {}), "payload")
    if "tags" in entry:
        fields["tags"] = tuple(_tags(entry["tags"]))
    if "meta" in entry:
        fields["meta"] = check_meta(entry["meta"])
    if "priority" in entry:
        fields["priority"] = _priority(entry["priority"])
    if "max_attempts" in entry:
        attempts = entry["max_attempts"]
        if isinstance(attempts, bool) or not isinstance(attempts, int):
            raise InvalidSchedule("max_attempts must be a whole number")
        if not 1 <= attempts <= MAX_ATTEMPTS:
            raise InvalidSchedule(f"max_attempts must be between 1 and {MAX_ATTEMPTS}")
        fields["max_attempts"] = attempts
    if entry.get("timeout") is not None:
        timeout = entry["timeout"]
        number = isinstance(timeout, int | float) and not isinstance(timeout, bool)
        if number and math.isfinite(timeout) and timeout > 0:
            timeout = timedelta(seconds=timeout)
        fields["timeout"] = check_duration(timeout, "timeout (seconds)", InvalidSchedule)
    return Schedule(**fields)


def _tags(value: object) -> list[str]:
    if isinstance(value, list | tuple):  # a set's order would change between deploys
        return check_tags(value)
    raise InvalidSchedule(f"'tags' must be a list of strings, not {type(value).__name__}")


def _priority(value: object) -> JobPriority:
    if isinstance(value, str) and value.upper() in JobPriority.__members__:
        return JobPriority[value.upper()]
    if isinstance(value, int) and not isinstance(value, bool) and value in set(JobPriority):
        return JobPriority(value)
    names = ", ".join(p.name.lower() for p in JobPriority)
    raise InvalidSchedule(f"unknown priority {value!r} (one of {names}, or 0 to 4)")


def _task_fields(entry: Mapping) -> dict[str, Any]:
    """A django.tasks task's queue, priority and job payload (see `tasks_backend`)."""
    from django.tasks import Task

    from queues.tasks.jobs import job_priority, task_payload

    if "payload" in entry:
        raise InvalidSchedule("a 'task' takes 'args' and 'kwargs', not a 'payload'")
    path = entry["task"]
    if not isinstance(path, str):
        raise InvalidSchedule("'task' must be the dotted path of a task")
    try:
        task = import_string(path)
    except ImportError as exc:
        raise InvalidSchedule(f"cannot import the task {path!r}: {exc}") from None
    if not isinstance(task, Task):
        raise InvalidSchedule(f"{entry['task']!r} is not a django.tasks task")
    args, kwargs = entry.get("args", []), entry.get("kwargs", {})
    if not isinstance(args, list | tuple) or not isinstance(kwargs, Mapping):
        raise InvalidSchedule("'args' must be a list and 'kwargs' a dict")
    return {
        "queue": validate_queue_name(task.queue_name),
        "priority": job_priority(task.priority),
        "payload": task_payload(task, list(args), dict(kwargs)),
        # A @task(tags=..., meta=...)'s own, unless the entry names its own.
        "tags": tuple(check_tags(list(getattr(task, "tags", ())))),
        "meta": check_meta(getattr(task, "meta", None)),
    }
