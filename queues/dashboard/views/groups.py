"""Batches and workflows: lists with their progress, and a page per batch or workflow (a
workflow's page draws its dependency graph, `queues.dashboard.graph`).
See docs/design/dashboard.md."""

from __future__ import annotations

from uuid import UUID

from django.shortcuts import get_object_or_404

from queues.dashboard import graph
from queues.dashboard.views.access import page
from queues.models import Batch, Job, Workflow

LIST_LIMIT = 50
JOBS_LIMIT = 200


@page(live=("groups-live",))
def batches(request):
    return "hammerweb/batches.html", {
        "batches": Batch.objects.all()[:LIST_LIMIT],
        "workflows": Workflow.objects.all()[:LIST_LIMIT],
    }


@page(live=("group-live",))
def batch_detail(request, batch_id):
    batch = get_object_or_404(Batch, id=batch_id)
    return "hammerweb/group.html", _group_context(batch, "batch", Job.objects.filter(batch=batch))


@page(live=("group-live",))
def workflow_detail(request, workflow_id):
    workflow = get_object_or_404(Workflow, id=workflow_id)
    context = _group_context(workflow, "workflow", Job.objects.filter(workflow=workflow))
    context["graph"] = graph.workflow_svg(list(context["jobs"]), _job_id(request))
    return "hammerweb/group.html", context


def _job_id(request) -> UUID | None:
    """The job the graph draws bold (`?job=`, from a job's page); anything else, none."""
    try:
        return UUID(request.GET.get("job", ""))
    except ValueError:
        return None


def _group_context(group, kind: str, jobs) -> dict:
    return {
        "group": group,
        "kind": kind,
        "mode": group.failure_mode if kind == "batch" else group.failure_policy,
        "jobs": jobs.order_by("created_at", "id").defer("payload", "result")[:JOBS_LIMIT],
        "jobs_limit": JOBS_LIMIT,
    }
