"""Filters that format numbers, times and payloads for people, the sparkline and the history
chart, and the tags that make a region live (`live` polls, `live_socket` opens the page's
WebSocket). Every moment is written in UTC and says so (`utc`, `moment`), the zone the
search fields read too; a recurring job's runs add their schedule's zone. See
docs/design/dashboard.md."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django import template
from django.utils import timezone
from django.utils.html import format_html, format_html_join

from queues.dashboard import charts
from queues.dashboard.routing import socket_url
from queues.engine import recurring
from queues.text import clean

register = template.Library()


@register.filter
def compact(value) -> str:
    """950 -> "950", 1234 -> "1.2k", 1_250_000 -> "1.3M"."""
    if value is None or value == "":
        return "0"
    n = int(value)
    for limit, suffix in ((1_000_000_000, "G"), (1_000_000, "M"), (1_000, "k")):
        if abs(n) >= limit:
            text = f"{n / limit:.1f}".removesuffix(".0")
            return f"{text}{suffix}"
    return str(n)


def _span(seconds: float) -> str:
    seconds = abs(seconds)
    if seconds < 1:
        return "now"
    if seconds < 60:
        return f"{int(seconds)} s"
    if seconds < 3600:
        return f"{int(seconds // 60)} min"
    if seconds < 86400:
        hours, rest = divmod(int(seconds), 3600)
        return f"{hours} h {rest // 60} min" if rest >= 60 else f"{hours} h"
    return f"{int(seconds // 86400)} d"


@register.filter
def ago(value: datetime | None, now: datetime | None = None) -> str:
    """A moment relative to now: "3 s ago", "in 5 min", "now"."""
    if not value:
        return "—"
    delta = ((now or timezone.now()) - value).total_seconds()
    text = _span(delta)
    if text == "now":
        return "just now"
    return f"{text} ago" if delta > 0 else f"in {text}"


#: How the dashboard writes a moment: in UTC, the zone named ("2026-12-02 14:30:05 UTC").
MOMENT = "%Y-%m-%d %H:%M:%S"


@register.filter
def utc(value: datetime | None, fmt: str = MOMENT) -> str:
    """`value` in UTC with the zone named, for a text or a title: "2026-12-02 14:30:05 UTC"
    (`fmt` a strftime format, e.g. "%H:%M" for "14:30 UTC")."""
    if not value:
        return "—"
    return f"{value.astimezone(UTC).strftime(fmt)} UTC"


@register.simple_tag
def moment(value: datetime | None, fmt: str = MOMENT):
    """`value` as a <time> element: the `utc` text, its ISO form for machines."""
    if not value:
        return "—"
    iso = value.astimezone(UTC).isoformat().replace("+00:00", "Z")
    return format_html('<time datetime="{}">{}</time>', iso, utc(value, fmt))


@register.filter
def age(value: datetime | None) -> str:
    """How long since `value`, without "ago": "4 min"."""
    if not value:
        return "—"
    return _span((timezone.now() - value).total_seconds()).replace("now", "0 s")


@register.filter
def duration(value: timedelta | None) -> str:
    if value is None:
        return "—"
    seconds = value.total_seconds()
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    return _span(seconds)


@register.filter
def pretty_json(value) -> str:
    """The value as indented JSON text (escaped by the template like any other text).
    Cleaned: SQLite kept unpaired surrogates in JSON before the engine refused them, and a
    page holding one cannot be encoded."""
    return clean(json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str))


@register.filter
def percent(part, whole) -> float:
    return round(100 * (part or 0) / whole, 1) if whole else 0.0


@register.simple_tag
def sparkline(values: list[int], width: int = 120, height: int = 24):
    """A server-rendered SVG polyline of `values`, completions per full minute (oldest
    first)."""
    if not values:
        return ""
    top = max(max(values), 1)
    step = width / max(len(values) - 1, 1)
    points = format_html_join(
        " ",
        "{},{}",
        (
            (f"{i * step:.1f}", f"{height - 1 - (v / top) * (height - 2):.1f}")
            for i, v in enumerate(values)
        ),
    )
    label = f"{sum(values)} completed in the last {len(values)} full minutes"
    return format_html(
        # Stretched to the cell's width on a phone: the line keeps its thickness.
        '<svg class="spark" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" '
        'preserveAspectRatio="none" aria-label="{label}"><polyline points="{points}" '
        'fill="none" stroke="currentColor" stroke-width="1.5" stroke-linejoin="round" '
        'vector-effect="non-scaling-stroke"/></svg>',
        w=width,
        h=height,
        label=label,
        points=points,
    )


VISIBLE = "document.visibilityState === 'visible'"
#: Set on <body> by static/hammerweb/live.js while the dashboard's WebSocket is open: the
#: server then pushes the live regions and their polls stand down.
PUSHED = "document.body.hasAttribute('data-ws-live')"
#: Set on <body> by live.js while the operator has paused the live updates (kept per tab).
PAUSED = "document.body.hasAttribute('data-live-paused')"


@register.simple_tag(takes_context=True)
def live(context, condition: str = "", every: str = "2s"):
    """The attributes of a live region: re-fetched `every` 2 s while the tab is visible, the
    operator has not paused the live updates, no WebSocket pushes it (and `condition`
    holds), and at once after an action (the `refresh` event). `every=""`: only then, for a
    region whose read is too dear to repeat every few seconds (a search)."""
    check = f"{VISIBLE} && !{PUSHED} && !{PAUSED}"
    if condition:
        check = f"{check} && {condition}"
    trigger = f"every {every} [{check}], refresh from:body" if every else "refresh from:body"
    # The region is its own target whatever encloses it (the bulk form targets #flash);
    # hx-disinherit: the buttons inside keep their own target and swap.
    return format_html(
        'hx-get="{}" hx-trigger="{}" hx-target="this" hx-swap="outerHTML" hx-disinherit="*"',
        context["request"].get_full_path(),
        trigger,
    )


@register.simple_tag(takes_context=True)
def live_socket(context, page: str = "overview"):
    """The attributes that open a page's WebSocket under its mount, or nothing where there
    is none to open (WSGI: the page polls)."""
    url = socket_url(context["request"], page)
    if url is None:
        return ""
    return format_html(' hx-ext="ws" ws-connect="{}"', url)


@register.filter
def preview(value, length: int = 100) -> str:
    """A one-line JSON preview, cut at `length` characters."""
    text = clean(json.dumps(value, ensure_ascii=False, separators=(", ", ": "), default=str))
    return text if len(text) <= length else text[: length - 1] + "…"


@register.simple_tag
def history_chart(row, window):
    """One queue's history as a server-drawn SVG bar chart (`queues.dashboard.charts`)."""
    return charts.history_chart(row.name, row.buckets, window.label)


@register.filter
def next_runs(job, now: datetime | None = None) -> list[tuple[datetime, str]]:
    """The next 5 runs of a recurring job (`queues.engine.recurring.next_runs`), each with its
    time in the schedule's own zone ("03:00:00 CET", its date too when it is another day than
    in UTC), or "" for a UTC schedule: the page writes the run in UTC, as every moment, and
    this beside it."""
    try:
        zone = ZoneInfo(job.timezone or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        zone = UTC
    if getattr(zone, "key", "UTC") in ("UTC", "Etc/UTC"):
        return [(run, "") for run in recurring.next_runs(job, now or timezone.now())]
    runs = []
    for run in recurring.next_runs(job, now or timezone.now()):
        local = run.astimezone(zone)
        same_day = local.date() == run.astimezone(UTC).date()
        runs.append((run, local.strftime("%H:%M:%S %Z" if same_day else f"{MOMENT} %Z")))
    return runs


@register.simple_tag
def error_chart(group, result):
    """An error group's attempts over the window (`queues.dashboard.charts`)."""
    step = result.window.span.total_seconds() / max(len(group.buckets), 1)
    return charts.error_chart(group.label, group.buckets, result.start, step)
