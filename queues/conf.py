"""Hammerweb's own settings: one optional `HAMMERWEB` dict in the project's settings, e.g.
`HAMMERWEB = {"PG_PREPARE": False}`. `OPTIONS` holds each key's default, type and meaning;
`manage.py check` refuses a bad dict, key or value (queues.E001). Nothing else reads the
project's settings for Hammerweb's options. See docs/design/vocabulary.md."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import urlsplit

from django.conf import settings

SETTING = "HAMMERWEB"


@dataclass(frozen=True)
class Option:
    default: object
    #: The type every value must have (a bool is not accepted for an int).
    kind: type
    help: str
    #: Values of the right type that are still refused (e.g. a batch of 0), and why.
    refuse: Callable[[object], bool] | None = None
    why: str = ""


OPTIONS: dict[str, Option] = {
    "ARCHIVE_AFTER": Option(
        None,
        timedelta,
        "move finished jobs older than this (a timedelta) out of the jobs table into the "
        "archive, each maintenance pass of runworker; None: never (docs: Archiving "
        "finished jobs)",
        refuse=lambda value: value <= timedelta(0),
        why="a timedelta above 0, or None",
    ),
    "ARCHIVE_BATCH": Option(
        1000,
        int,
        "jobs moved to the archive per transaction (ARCHIVE_AFTER): each transaction short, "
        "its rows few enough to hold in memory",
        refuse=lambda value: value < 1,
        why="a whole number above 0",
    ),
    "METRICS_TOKEN": Option(
        None,
        str,
        "a bearer token that opens the Prometheus metrics (the view and runworker "
        "--metrics-port) to a scraper: `Authorization: Bearer <token>`; None: the view is "
        "staff-only and the port open (docs: Monitoring with Prometheus)",
    ),
    "PG_PREPARE": Option(
        None,
        bool,
        "prepare the engine's claim and completion statements on each PostgreSQL connection: "
        "None (the default), unless through a transaction-mode pooler (PG_TRANSACTION_POOLING);"
        " True, always (PgBouncer 1.21+ with max_prepared_statements above 0); False, never",
    ),
    "PG_TRANSACTION_POOLING": Option(
        None,
        bool,
        "PostgreSQL is reached through a transaction-mode pooler (PgBouncer's pool_mode = "
        "transaction): True, nothing LISTENs (idle workers and the live pages poll) and the "
        "engine prepares no statement unless PG_PREPARE says so; False, a direct connection "
        "or a session-mode pool; None, detected once per server (a pooler found acts as "
        "True, with a warning)",
    ),
    "SCHEDULES": Option(
        {},
        dict,
        "recurring jobs declared in code, by name: {name: {cron, queue and payload, or task; "
        "timezone, priority, max_attempts, timeout}}, synchronised when runworker starts "
        "(docs: Schedules)",
    ),
    "TRACE_URL": Option(
        None,
        str,
        "a link from a job's page to its trace in your tracing backend, {trace_id} standing "
        "for the trace's id, e.g. 'https://jaeger.example/trace/{trace_id}'; None: the page "
        "shows the trace id without a link (docs: Tracing with OpenTelemetry)",
        refuse=lambda value: not is_trace_url(value),
        why="an http:// or https:// URL holding {trace_id}",
    ),
    "TRACING": Option(
        True,
        bool,
        "OpenTelemetry tracing, when opentelemetry-api is installed (the otel extra): each "
        "enqueue is a span whose context is stored with the job, and each run a span linked "
        "to it; False: no span, no context stored (docs: Tracing with OpenTelemetry)",
    ),
    "WEBSOCKET": Option(
        True,
        bool,
        "pages served over ASGI open the live-push WebSocket (routes in queues.routing); "
        "False: they poll every 2 s, as under WSGI",
    ),
}


def get(name: str):
    """The project's value of `HAMMERWEB[name]`, or its default."""
    option = OPTIONS[name]  # a KeyError here is a bug in Hammerweb, not in the project
    values = getattr(settings, SETTING, None)
    if isinstance(values, dict):
        return values.get(name, option.default)
    return option.default


def problems() -> list[str]:
    """What is wrong with the project's `HAMMERWEB`, one sentence each (none: it is fine)."""
    values = getattr(settings, SETTING, None)
    if values is None:
        return []
    if not isinstance(values, dict):
        return [f"{SETTING} must be a dict, not {type(values).__name__}"]
    found = []
    for name, value in values.items():
        option = OPTIONS.get(name)
        if option is None:
            known = ", ".join(sorted(OPTIONS))
            found.append(f"{SETTING}[{name!r}] is not a Hammerweb setting (known: {known})")
        elif not (value is None and option.default is None) and not _is_kind(
            value, option.kind
        ):  # None where None is the default: e.g. an environment variable left unset
            found.append(f"{SETTING}[{name!r}] must be a {option.kind.__name__}, not {value!r}")
        elif value is not None and option.refuse is not None and option.refuse(value):
            found.append(f"{SETTING}[{name!r}] must be {option.why}, not {value!r}")
    return found


def is_trace_url(value: str) -> bool:
    """Whether `value` is a `TRACE_URL`: an http or https URL with a host (never javascript:
    or data:, which a link would run), without spaces, that holds `{trace_id}`."""
    if "{trace_id}" not in value or not all(c.isprintable() and not c.isspace() for c in value):
        return False
    try:
        parts = urlsplit(value)
        return parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:  # e.g. an unclosed IPv6 bracket
        return False


def _is_kind(value: object, kind: type) -> bool:
    if kind is not bool and isinstance(value, bool):
        return False
    return isinstance(value, kind)
