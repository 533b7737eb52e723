"""Batches and workflows: lists with progress, and a page per batch or workflow."""

from __future__ import annotations

from django.shortcuts import get_object_or_404

from ..models import Batch, Job, Workflow
from .access import page

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
    jobs = Job.objects.filter(workflow=workflow)
    return "hammerweb/group.html", _group_context(workflow, "workflow", jobs)


def _group_context(group, kind: str, jobs) -> dict:
    return {
        "group": group,
        "kind": kind,
        "mode": group.failure_mode if kind == "batch" else group.failure_policy,
        "jobs": jobs.order_by("created_at", "id").defer("payload", "result")[:JOBS_LIMIT],
        "jobs_limit": JOBS_LIMIT,
    }
