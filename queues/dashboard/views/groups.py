"""Batches and workflows: lists with their progress, and a page per batch or workflow (a
workflow's page draws its dependency graph, `queues.dashboard.graph`).
See docs/design/dashboard.md."""

from __future__ import annotations

from uuid import UUID

from django.shortcuts import get_object_or_404

from queues.callbacks import EVENTS
from queues.dashboard import graph
from queues.dashboard.views.access import page
from queues.engine import tallies
from queues.models import ArchivedJob, Batch, Job, Workflow
from queues.tasks.jobs import TASK_KEY

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
        "callbacks": _callbacks(group),
        "finished": tallies.finished(group),
    }


def _callbacks(group) -> list[dict]:
    """The group's declared callbacks in event order: what each runs, and its job once
    enqueued (None if not yet; `gone` if no longer in the jobs table, `archived` if moved to
    the archive)."""
    declared = group.callbacks if isinstance(group.callbacks, dict) else {}
    enqueued = group.callback_jobs if isinstance(group.callback_jobs, dict) else {}
    ids = [job_id for job_id in map(_uuid, enqueued.values()) if job_id is not None]
    jobs = Job.objects.using(group._state.db).filter(id__in=ids).only("id", "status")
    found = {str(job.id): job for job in jobs}
    missing = [job_id for job_id in ids if str(job_id) not in found]
    archived = {
        str(job_id)
        for job_id in ArchivedJob.objects.using(group._state.db)
        .filter(id__in=missing)
        .values_list("id", flat=True)
    }
    rows = []
    for event in EVENTS:
        spec = declared.get(event)
        if not isinstance(spec, dict):
            continue
        payload = spec.get("payload") if isinstance(spec.get("payload"), dict) else {}
        task = payload.get(TASK_KEY) if isinstance(payload.get(TASK_KEY), dict) else None
        job_id = enqueued.get(event)
        rows.append({
            "event": event,
            "queue": spec.get("queue_name"),
            "task": task.get("path") if task else None,
            "job": found.get(str(job_id)) if job_id else None,
            "gone": job_id if job_id and str(job_id) not in found else None,
            "archived": str(job_id) in archived,
        })  # fmt: skip
    return rows


def _uuid(value) -> UUID | None:
    try:
        return UUID(str(value))
    except ValueError:
        return None
