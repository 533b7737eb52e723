"""A workflow's dependency graph drawn as SVG by the server: each job a box linking to its
page, each dependency an arrow from the job waited for to the job that waits. Layered left to
right by the longest chain of dependencies before a job, so every arrow points rightwards;
bounded to the workflow's first `groups.JOBS_LIMIT` jobs. See docs/design/dashboard.md."""

from __future__ import annotations

from collections import defaultdict

from django.urls import reverse
from django.utils.html import format_html, format_html_join

from queues.models import JobDependency

BOX_W, BOX_H, GAP_X, GAP_Y, PAD = 150, 40, 60, 14, 10


def layers(ids: list, edges: list[tuple]) -> dict:
    """{id: column} for the jobs `ids` and the (parent, child) `edges` among them: a root is
    in column 0, a job one column after its furthest parent. A cycle (no valid workflow has
    one) leaves its jobs in the column they had reached."""
    parents = defaultdict(list)
    for parent, child in edges:
        parents[child].append(parent)
    column = dict.fromkeys(ids, 0)
    for _ in range(len(ids)):  # Bellman-Ford style: at most len(ids) rounds of relaxing
        changed = False
        for child, its_parents in parents.items():
            best = max(column[p] + 1 for p in its_parents)
            if best > column[child]:
                column[child], changed = min(best, len(ids)), True
        if not changed:
            break
    return column


def workflow_svg(jobs: list, current=None):
    """The SVG of `jobs` (of one workflow, in creation order) and the dependencies among
    them; `current` (a job id) is drawn bold. Empty for no jobs."""
    if not jobs:
        return ""
    by_id = {job.id: job for job in jobs}
    edges = list(
        JobDependency.objects.filter(job_id__in=by_id, parent_id__in=by_id).values_list(
            "parent_id", "job_id"
        )
    )
    column = layers(list(by_id), edges)
    rows: dict[int, int] = defaultdict(int)
    place = {}
    for job in jobs:
        c = column[job.id]
        place[job.id] = (PAD + c * (BOX_W + GAP_X), PAD + rows[c] * (BOX_H + GAP_Y))
        rows[c] += 1
    width = PAD * 2 + (max(column.values()) + 1) * (BOX_W + GAP_X) - GAP_X
    height = PAD * 2 + max(rows.values()) * (BOX_H + GAP_Y) - GAP_Y
    arrows = format_html_join(
        "",
        '<path class="edge" marker-end="url(#arrow)" d="M{} {} C{} {} {} {} {} {}"/>',
        (_curve(place[parent], place[child]) for parent, child in edges),
    )
    boxes = format_html_join(
        "",
        '<a href="{}" class="node s-{}{}"><title>{} ({}): {}</title>'
        '<rect x="{}" y="{}" width="{}" height="{}" rx="6"/>'
        '<text x="{}" y="{}">{} · {}</text><text x="{}" y="{}">{}</text></a>',
        (
            (
                reverse("dashboard:job", args=[job.id]),
                job.status.lower(),
                " current" if job.id == current else "",
                job.id,
                job.queue_name,
                job.status,
                x,
                y,
                BOX_W,
                BOX_H,
                x + 8,
                y + 16,
                str(job.id)[:8],
                job.status,
                x + 8,
                y + 31,
                _cut(job.queue_name),
            )
            for job in jobs
            for x, y in [place[job.id]]
        ),
    )
    return format_html(
        '<svg class="workflow-graph" viewBox="0 0 {w} {h}" width="{w}" role="img" '
        'aria-label="{n} jobs, {e} dependencies"><defs><marker id="arrow" viewBox="0 0 8 8" '
        'refX="8" refY="4" markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
        '<path d="M0 0 L8 4 L0 8 z" fill="currentColor"/></marker></defs>{a}{b}</svg>',
        w=width,
        h=height,
        n=len(jobs),
        e=len(edges),
        a=arrows,
        b=boxes,
    )


def _curve(start: tuple[int, int], end: tuple[int, int]) -> tuple[int, ...]:
    x1, y1 = start[0] + BOX_W, start[1] + BOX_H // 2
    x2, y2 = end[0], end[1] + BOX_H // 2
    middle = (x1 + x2) // 2
    return (x1, y1, middle, y1, middle, y2, x2, y2)


def _cut(text: str, length: int = 20) -> str:
    return text if len(text) <= length else text[: length - 1] + "…"
