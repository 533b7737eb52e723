"""The overview, a queue's page (its counts, filters and job list) and a job's page (its
fields, dependencies, attempts and the actions its status allows).
See docs/design/dashboard.md."""

from __future__ import annotations

from uuid import UUID

from django.http import Http404
from django.utils import timezone

from queues import conf, tracing
from queues.dashboard.views import bulk
from queues.dashboard.views.access import page
from queues.engine import recurring, transitions, unique
from queues.engine.queue import JobQueue
from queues.enums import PRIORITY_CHOICES, JobStatus
from queues.exceptions import InvalidQueueName
from queues.models import Batch, Job, JobDependency, QueuePause, Workflow
from queues.reads import stats
from queues.reads.listing import JobFilter, list_jobs
from queues.reads.timeline import SHOWN, Timeline
from queues.validation import validate_queue_name

DEPENDENCY_LIMIT = 50
#: The queue page's filters, which its "all matching" form carries over.
QUEUE_FILTERS = ("status", "priority", "tag", "q")


@page(live=("overview-live",))
def overview(request):
    return "hammerweb/overview.html", {"overview": stats.overview(), "now": timezone.now()}


@page(live=("queue-live", "queue-jobs"))
def queue_detail(request, name: str):
    try:
        validate_queue_name(name)
    except InvalidQueueName:
        raise Http404("No such queue") from None  # no queue can have this name
    counts = stats.queue_counts(name)
    pause = QueuePause.objects.filter(queue_name=name).first()
    config = JobQueue().queue_config(name)
    configured = config.max_running is not None or config.rate is not None
    if not any(counts.values()) and pause is None and not configured:
        raise Http404("No such queue")
    flt = JobFilter.from_query(name, request.GET)
    present = {status for status, n in counts.items() if n}
    jobs = list_jobs(flt, request.GET.get("after", ""), present)
    return "hammerweb/queue.html", {
        "name": name,
        "counts": list(counts.items()),
        "pause": pause,
        "config": config,
        "running": counts.get(JobStatus.RUNNING, 0),
        "filter": flt,
        "page": jobs,
        "statuses": JobStatus.values,
        "priorities": PRIORITY_CHOICES,
        "bulk_actions": bulk.can_bulk(request.user),
        "bulk_query": {k: v for k, v in request.GET.items() if k in QUEUE_FILTERS},
        "can_bulk": request.user.has_perm("queues.change_job")
        or request.user.has_perm("queues.delete_job"),
        "now": timezone.now(),
    }


@page(live=("job-live", "job-attempts"))
def job_detail(request, job_id):
    job = Job.objects.select_related("batch", "workflow").filter(id=job_id).first()
    if job is None:
        return _archived_detail(job_id)
    parents = (
        JobDependency.objects.filter(job_id=job.id)
        .select_related("parent")
        .only("parent__id", "parent__status", "parent__queue_name")[:DEPENDENCY_LIMIT]
    )
    children = (
        JobDependency.objects.filter(parent_id=job.id)
        .select_related("job")
        .only("job__id", "job__status", "job__queue_name")[:DEPENDENCY_LIMIT]
    )
    now = timezone.now()
    return "hammerweb/job.html", {
        "job": job,
        "unique_holds": unique.holds(job, now),
        "unique_until": unique.period_end(job),
        "parents": [edge.parent for edge in parents],
        "children": [edge.job for edge in children],
        "lease_expired": job.status == JobStatus.RUNNING
        and job.lease_expires_at is not None
        and job.lease_expires_at < timezone.now(),
        "actions": transitions.offered(job),
        "timeline": Timeline(job.id),
        "run_now_of": _run_now_of(job),
        # Why it waits: a handful of indexed reads, for a Pending job only.
        "explanation": JobQueue().explain(job.id) if job.status == JobStatus.PENDING else None,
        "trace": _trace(job),
        "now": now,
    }


def _archived_detail(job_id):
    """The page of a job in the archive, read-only but for its Restore button; 404 if the
    archive has no such job either."""
    archived = JobQueue().get_archived_job(job_id)
    if archived is None:
        raise Http404("No such job")
    job = archived.job
    return "hammerweb/archived_job.html", {
        "job": job,
        "archived_at": archived.archived_at,
        # Newest first, as many as the live page shows.
        "attempts": archived.attempts[::-1][:SHOWN],
        "older_attempts": max(0, len(archived.attempts) - SHOWN),
        "batch": Batch.objects.filter(id=job.batch_id).first() if job.batch_id else None,
        "workflow": Workflow.objects.filter(id=job.workflow_id).first()
        if job.workflow_id
        else None,
        "trace": _trace(job),
        "now": timezone.now(),
    }


def _trace(job) -> dict | None:
    """The trace id of the job's enqueue, and its link when `HAMMERWEB["TRACE_URL"]` says how:
    checked again here, so that a URL the checks would refuse (they can be skipped) is no
    link (a javascript: one would run)."""
    found = tracing.trace_id(job.trace_context)
    if found is None:
        return None
    url = conf.get("TRACE_URL")
    if not (isinstance(url, str) and conf.is_trace_url(url)):
        return {"id": found, "url": None}
    return {"id": found, "url": url.replace("{trace_id}", found)}


def _run_now_of(job) -> str | None:
    """The recurring row a one-off run was enqueued for ("Run now"), if its meta names one
    that is a job id (meta is the application's too: anything else is no link)."""
    value = (job.meta or {}).get(recurring.RUN_NOW_OF) if isinstance(job.meta, dict) else None
    try:
        return str(UUID(value)) if isinstance(value, str) else None
    except ValueError:
        return None
