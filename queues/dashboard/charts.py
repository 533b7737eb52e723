"""The history's bar chart, drawn as SVG by the server (no chart library, no script): one
stacked bar a bucket (completed, retried, failed), each with a <title> that a hover or a
screen reader tells. Every text is escaped: queue names are user data.
See docs/design/dashboard.md."""

from __future__ import annotations

from datetime import UTC, datetime

from django.utils.html import escape, format_html
from django.utils.safestring import mark_safe

WIDTH, HEIGHT, TOP = 720, 140, 12
KINDS = (("completed", 0), ("retried", 2), ("failed", 1))


def _when(moment: datetime, hourly: bool) -> str:
    """A bucket's start in UTC, named, as every moment on the dashboard."""
    return moment.astimezone(UTC).strftime("%a %d %b %H:00 UTC" if hourly else "%H:%M UTC")


def _bar(x: float, width: float, values: list[int], scale: float, title: str) -> str:
    """One bucket's group. Plain string formatting: it holds only numbers and the title,
    which `history_chart` escapes (a week of six queues is a thousand bars)."""
    rects, y = [], HEIGHT
    for kind, index in KINDS:
        h = values[index] * scale
        if h <= 0:
            continue
        y -= h
        rects.append(
            f'<rect class="{kind}" x="{x:.1f}" y="{y:.1f}" width="{width:.1f}" height="{h:.1f}"/>'
        )
    # A bar with nothing to show still gets its full height of hover area.
    return (
        f'<g class="bar"><title>{escape(title)}</title><rect class="hover" x="{x:.1f}" y="0" '
        f'width="{width:.1f}" height="{HEIGHT}"/>{"".join(rects)}</g>'
    )


def history_chart(name: str, buckets: list[tuple[datetime, list[int]]], window_label: str):
    """The SVG of one queue's buckets ((start, [completed, failed, retried]), oldest
    first)."""
    if not buckets:
        return ""
    hourly = len(buckets) > 1 and (buckets[1][0] - buckets[0][0]).total_seconds() >= 3600
    top = max(max(v[0] + v[1] + v[2] for _, v in buckets), 1)
    scale = (HEIGHT - TOP) / top
    step = WIDTH / len(buckets)
    width = max(step - (1 if step > 3 else 0), 0.5)
    bars = mark_safe(  # noqa: S308 - numbers, and titles escaped by _bar
        "".join(
            _bar(
                i * step,
                width,
                values,
                scale,
                f"{_when(start, hourly)}: {values[0]:,} completed, "
                f"{values[1]:,} failed, {values[2]:,} retried",
            )
            for i, (start, values) in enumerate(buckets)
        )
    )
    done, failed, retried = (sum(v[i] for _, v in buckets) for i in range(3))
    label = (
        f"{name}, {window_label}: {done:,} completed, {failed:,} failed, {retried:,} retried; "
        f"at most {top:,} in one {'hour' if hourly else 'minute'}"
    )
    return format_html(
        '<svg class="chart" viewBox="0 0 {w} {h}" preserveAspectRatio="none" role="img" '
        'aria-label="{label}"><line class="axis" x1="0" y1="{top}" x2="{w}" y2="{top}"/>'
        '{bars}</svg><div class="chart-scale"><span>{first}</span>'
        '<span title="{top_exact}">max {top_exact} / {unit}</span><span>{last}</span></div>',
        w=WIDTH,
        h=HEIGHT,
        top=TOP,
        label=label,
        bars=bars,
        first=_when(buckets[0][0], hourly),
        last=_when(buckets[-1][0], hourly),
        top_exact=f"{top:,}",
        unit="hour" if hourly else "minute",
    )


def error_chart(label: str, counts: list[int], start: datetime, step_seconds: float) -> str:
    """An error group's attempts per bucket (oldest first) as a small SVG bar chart, drawn as
    `history_chart` draws its bars; `label` (user data) is escaped."""
    if not counts:
        return ""
    top = max(max(counts), 1)
    scale = (HEIGHT - TOP) / top
    step = WIDTH / len(counts)
    width = max(step - (1 if step > 3 else 0), 0.5)
    hourly = step_seconds >= 3600
    bars = []
    for i, n in enumerate(counts):
        moment = datetime.fromtimestamp(start.timestamp() + i * step_seconds, UTC)
        h = n * scale
        rect = (
            f'<rect class="failed" x="{i * step:.1f}" y="{HEIGHT - h:.1f}" '
            f'width="{width:.1f}" height="{h:.1f}"/>'
        )
        title = escape(f"{_when(moment, hourly)}: {n:,} attempts")
        bars.append(f'<g class="bar"><title>{title}</title>{rect if n else ""}</g>')
    return format_html(
        '<svg class="chart spark" viewBox="0 0 {w} {h}" preserveAspectRatio="none" role="img" '
        'aria-label="{label}">{bars}</svg>',
        w=WIDTH,
        h=HEIGHT,
        label=f"{label}: {sum(counts):,} attempts, at most {top:,} in one bucket",
        bars=mark_safe("".join(bars)),  # noqa: S308 - numbers, and titles escaped above
    )
