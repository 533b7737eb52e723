"""Dashboard actions. Each calls one engine method of `JobQueue`, the same method the admin
calls; a refused transition (`QueueError`) becomes a message shown in place (see
`access.action`). See docs/design/dashboard.md."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import redirect
from django.urls import reverse
from django_htmx.http import HttpResponseClientRedirect

from queues.dashboard.views.access import action, notice
from queues.enums import JobStatus
from queues.exceptions import QueueError
from queues.validation import parse_job_id

MAX_BULK = 500
JOB_ACTIONS = {
    "retry": ("queues.change_job", "retry_job", "queued again"),
    "cancel": ("queues.change_job", "cancel_job", "cancelled"),
    "delete": ("queues.delete_job", "delete_job", "deleted"),
}


def _queue_name(request) -> str:
    return request.POST.get("queue", "")


@action("queues.change_queuepause")
def pause(request, queue):
    name = _queue_name(request)
    queue.pause_queue(
        name, paused_by=request.user.get_username(), reason=request.POST.get("reason") or None
    )
    return notice(request, f"Paused {name}: workers take no new jobs from it.")


@action("queues.change_queuepause")
def resume(request, queue):
    name = _queue_name(request)
    queue.resume_queue(name, resumed_by=request.user.get_username())
    return notice(request, f"Resumed {name}.")


@action("queues.change_queueconfig")
def limit(request, queue):
    """Set (or, left blank, remove) the queue's limit of running jobs and, when the form has
    its fields, its rate; the engine refuses a bad value (InvalidQueueConfig, shown in
    place) and writes nothing."""
    name, post = _queue_name(request), request.POST
    settings: dict[str, object] = {"max_running": _number(post.get("max_running", ""), int)}
    if "rate_jobs" in post or "rate_seconds" in post:
        jobs = _number(post.get("rate_jobs", ""), int)
        seconds = _number(post.get("rate_seconds", ""), float)
        settings["rate"] = None if jobs is None and seconds is None else (jobs, seconds)
    config = queue.queue_config(name, updated_by=request.user.get_username(), **settings)
    if config.max_running is None:
        said = f"{name} has no limit: workers claim as many jobs as they can."
    else:
        said = f"{name}: at most {config.max_running} jobs run at once, across every worker."
    if config.rate is not None:
        jobs, seconds = config.rate
        said += f" At most {jobs} jobs start in each {seconds:g} s, across every worker."
    elif "rate" in settings:
        said += " No rate."
    return notice(request, said)


def _number(text: str, kind):
    """A form's number, None when blank; not a number: the text, for the engine to say why."""
    text = text.strip()
    if not text:
        return None
    try:
        return kind(text)
    except ValueError:
        return text


def _told(verb: str, request) -> dict:
    """What the engine is told besides the job: who cancelled it and why (the why is the
    answer to the button's prompt, or the form's `reason`)."""
    if verb != "cancel":
        return {}
    reason = f"Cancelled by {request.user.get_username()} in the dashboard"
    why = (request.htmx.prompt if request.htmx else None) or request.POST.get("reason") or ""
    return {"reason": f"{reason}: {why.strip()}" if why.strip() else reason}


def _job_action(verb: str):
    permission, method, done = JOB_ACTIONS[verb]

    @action(permission)
    def view(request, queue, job_id):
        job = queue.get_job(job_id)
        getattr(queue, method)(job_id, **_told(verb, request))
        text = f"Job {job_id} {done}."
        if verb == "cancel" and job is not None and job.status == JobStatus.RUNNING:
            text += " Its worker asks its handler to stop within a few seconds."
        if verb != "delete" or job is None:
            return notice(request, text)
        # The job's page is gone: show the message on its queue's page.
        messages.success(request, text)
        url = reverse("dashboard:queue", args=[job.queue_name])
        return HttpResponseClientRedirect(url) if request.htmx else redirect(url)

    view.__name__ = view.__qualname__ = f"job_{verb}"
    return view


job_retry = _job_action("retry")
job_cancel = _job_action("cancel")
job_delete = _job_action("delete")


@action("queues.change_job")
def job_restore(request, queue, job_id):
    """Put an archived job back in the jobs table as it was, then show its (live) page."""
    if not queue.restore([job_id]):
        raise Http404("No archived job with this id")
    messages.success(request, f"Job {job_id} restored from the archive.")
    url = reverse("dashboard:job", args=[job_id])
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)


@action()
def bulk(request, queue):
    """Retry, cancel or delete the selected jobs; the permission depends on the verb."""
    verb = request.POST.get("action", "")
    if verb not in JOB_ACTIONS:
        return notice(request, "Choose retry, cancel or delete.", messages.ERROR)
    permission, method, done = JOB_ACTIONS[verb]
    if not request.user.has_perm(permission):
        raise PermissionDenied("You may look but not change this.")
    ids = request.POST.getlist("ids")[:MAX_BULK]
    if not ids:
        return notice(request, "Select some jobs first.", messages.WARNING)
    told = _told(verb, request)
    if verb == "delete":
        refused = []
        for job_id in ids:
            try:
                getattr(queue, method)(job_id, **told)
            except QueueError as exc:
                refused.append(str(exc))
    else:  # one transaction for them all (`JobQueue.retry_jobs`, `cancel_jobs`)
        valid, refused = _job_ids(ids)
        refused += getattr(queue, f"{method}s")(valid, **told).refusals()
    ok = len(ids) - len(refused)
    text = f"{ok} of {len(ids)} jobs {done}."
    if refused:
        more = f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""
        text += f" Refused: {refused[0]}{more}"
    return notice(request, text, messages.WARNING if refused else messages.SUCCESS)


def _job_ids(ids: list[str]) -> tuple[list, list[str]]:
    """The ids of the form that are job ids (each once), and why the others are not."""
    valid, refused = [], []
    for job_id in ids:
        try:
            parsed = parse_job_id(job_id)
        except QueueError as exc:
            refused.append(str(exc))
        else:
            if parsed in valid:
                refused.append(f"job {parsed} is selected twice")
            else:
                valid.append(parsed)
    return valid, refused


@action("queues.change_job")
def run_reaper(request, queue):
    recovery = queue.requeue_stale_jobs(ran_by=f"dashboard:{request.user.get_username()}")
    requeued, dead = len(recovery.requeued), len(recovery.dead)
    if not requeued and not dead:
        return notice(request, "Reaper ran: no running job had an expired lease.")
    return notice(request, f"Reaper ran: {requeued} requeued, {dead} marked Dead.")


@action("queues.change_job")
def set_recurring(request, queue, job_id, enabled: bool):
    if enabled:
        queue.enable_recurring_job(job_id)
    else:
        queue.disable_recurring_job(job_id)
    return notice(request, f"Recurring job {job_id} {'enabled' if enabled else 'disabled'}.")


@action("queues.add_job")
def run_now(request, queue, job_id):
    """Enqueue one run of a recurring job now; its schedule goes on unchanged."""
    new_id = queue.run_recurring_now(job_id, by=request.user.get_username())
    return notice(
        request, f"Recurring job {job_id} runs now as job {new_id}; its schedule is unchanged."
    )
