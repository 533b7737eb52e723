"""The dashboard's URLs, namespace `dashboard`: its pages, then its actions (POST only).
Projects include them through `queues.urls` (`include("queues.urls")`); the WebSocket routes
are in `routing`. See docs/design/dashboard.md."""

from __future__ import annotations

from django.urls import path

from queues.dashboard.views import actions, bulk, errors, groups, operations, pages

app_name = "dashboard"

urlpatterns = [
    path("", pages.overview, name="overview"),
    path("queues/<path:name>/", pages.queue_detail, name="queue"),
    path("jobs/", bulk.jobs, name="jobs"),
    path("jobs/<uuid:job_id>/", pages.job_detail, name="job"),
    path("reaper/", operations.reaper, name="reaper"),
    path("batches/", groups.batches, name="batches"),
    path("batches/<uuid:batch_id>/", groups.batch_detail, name="batch"),
    path("workflows/<uuid:workflow_id>/", groups.workflow_detail, name="workflow"),
    path("recurring/", operations.recurring, name="recurring"),
    path("history/", operations.history, name="history"),
    path("workers/", operations.workers, name="workers"),
    path("errors/", errors.errors, name="errors"),
    # Actions (POST only).
    path("actions/pause/", actions.pause, name="pause"),
    path("actions/resume/", actions.resume, name="resume"),
    path("actions/limit/", actions.limit, name="limit"),
    path("actions/bulk/", actions.bulk, name="bulk"),
    path("actions/reaper/", actions.run_reaper, name="run-reaper"),
    path("actions/errors/retry/", errors.retry_group, name="errors-retry"),
    path("bulk/confirm/", bulk.confirm, name="bulk-confirm"),
    path("bulk/start/", bulk.start, name="bulk-start"),
    path("bulk/<int:op_id>/", bulk.operation, name="bulk-operation"),
    path("bulk/<int:op_id>/cancel/", bulk.cancel, name="bulk-cancel"),
    path("jobs/<uuid:job_id>/retry/", actions.job_retry, name="job-retry"),
    path("jobs/<uuid:job_id>/cancel/", actions.job_cancel, name="job-cancel"),
    path("jobs/<uuid:job_id>/delete/", actions.job_delete, name="job-delete"),
    path("jobs/<uuid:job_id>/restore/", actions.job_restore, name="job-restore"),
    path("recurring/<uuid:job_id>/run-now/", actions.run_now, name="recurring-run-now"),
    path(
        "recurring/<uuid:job_id>/enable/",
        actions.set_recurring,
        {"enabled": True},
        name="recurring-enable",
    ),
    path(
        "recurring/<uuid:job_id>/disable/",
        actions.set_recurring,
        {"enabled": False},
        name="recurring-disable",
    ),
]
