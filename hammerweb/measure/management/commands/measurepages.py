"""`manage.py measurepages`: time every dashboard page (and the admin's job list) on the
current database.

Requests go through Django's test client in this process (no network), logged in as a
superuser, so the figures are the server's own time: queries plus rendering. Each page is
fetched once to warm up, then `--repeat` times; the median and the slowest wall-clock times
are printed, with the median CPU time of this process (on SQLite, which runs in-process,
that is the whole cost without the waiting a busy machine adds) and of its statements.
"""

from __future__ import annotations

import statistics
import time
from datetime import timedelta
from urllib.parse import urlencode

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from queues.enums import JobStatus
from queues.models import Batch, Job, Workflow
from queues.reads.listing import JobFilter, list_jobs
from queues.reads.search import SearchFilter
from queues.reads.search_page import search_jobs
from queues.reads.trends import WINDOWS

MEASURER = "pagemeasurer"


class Command(BaseCommand):
    help = "Time each dashboard page (median and slowest of --repeat requests)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--repeat", type=int, default=10)
        parser.add_argument("--budget-ms", type=float, default=200.0)
        parser.add_argument("--only", default="", help="only the pages whose label has this")

    def handle(self, *args, repeat: int, budget_ms: float, only: str, **options) -> None:
        client = Client(SERVER_NAME="localhost")
        client.force_login(_measurer())
        over = []
        self.stdout.write(
            f"{connection.vendor}, {Job.objects.count():,} jobs; "
            f"{repeat} requests per page after one warm-up"
        )
        self.stdout.write(
            f"{'page':<52} {'median ms':>10} {'max ms':>8} {'cpu ms':>8} {'sql ms':>8}"
        )
        for label, url, headers, *form in _pages():
            if only not in label:
                continue
            times, cpu, sql = [], [], []
            for i in range(repeat + 1):
                queries = _QueryTime()
                start, start_cpu = time.perf_counter(), time.process_time()
                with connection.execute_wrapper(queries):
                    if form:  # a POST that only reads (the count of a bulk confirmation)
                        response = client.post(url, form[0], headers=headers)
                    else:
                        response = client.get(url, headers=headers)
                elapsed = (time.perf_counter() - start) * 1000
                if response.status_code != 200:
                    raise CommandError(f"{url} answered {response.status_code}")
                if i:
                    times.append(elapsed)
                    cpu.append((time.process_time() - start_cpu) * 1000)
                    sql.append(queries.total * 1000)
            median, worst = statistics.median(times), max(times)
            if median > budget_ms:
                over.append(label)
            self.stdout.write(
                f"{label:<52} {median:>10.1f} {worst:>8.1f} {statistics.median(cpu):>8.1f}"
                f" {statistics.median(sql):>8.1f}"
            )
        if over:
            raise CommandError(f"over {budget_ms:.0f} ms (median): {', '.join(over)}")
        self.stdout.write(self.style.SUCCESS(f"every page under {budget_ms:.0f} ms (median)"))


class _QueryTime:
    """The wall time of a request's statements (on a machine others keep busy, the part of
    a page's time that the database spends, apart from the waits for a core)."""

    def __init__(self) -> None:
        self.total = 0.0

    def __call__(self, execute, sql, params, many, context):
        start = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            self.total += time.perf_counter() - start


def _measurer():
    user, _ = get_user_model().objects.get_or_create(
        username=MEASURER, defaults={"is_staff": True, "is_superuser": True}
    )
    return user


def _tag_pages(biggest: str, queue: str, job) -> list:
    """The queue page and the admin's job list filtered by tags of each kind filljobs gives:
    one on half of the jobs, a rare one, one of the long tail of customers."""
    admin = reverse("admin:queues_job_changelist")
    pages = [("admin jobs", admin, {})]
    for tag, label in (("eu", "half"), ("vip", "1 in 200"), ("customer-17", "long tail")):
        pages.append((f"queue {biggest}, tag {tag} ({label})", f"{queue}?tag={tag}", {}))
        pages.append((f"admin jobs, tag {tag} ({label})", f"{admin}?tag={tag}", {}))
    pages += [
        (f"queue {biggest}, tag eu, status Dead", f"{queue}?tag=eu&status=Dead", {}),
        (f"queue {biggest}, tag vip, search payload", f"{queue}?tag=vip&q=user4242@", {}),
        ("admin jobs, tag eu, status Dead", f"{admin}?tag=eu&status__exact=Dead", {}),
        (
            "admin jobs, tag eu, queue, priority",
            f"{admin}?tag=eu&queue_name={biggest}&priority__exact=4",
            {},
        ),
        ("admin job", reverse("admin:queues_job_change", args=[job]), {}),
    ]
    cursor = list_jobs(JobFilter(biggest, tag="eu")).next_cursor
    if cursor:
        after = urlencode({"tag": "eu", "after": cursor})
        pages.append((f"queue {biggest}, tag eu, page 2", f"{queue}?{after}", {}))
    return pages


def _history_pages(biggest: str) -> list:
    """The history page of each window, of every queue and of one queue."""
    url = reverse("dashboard:history")
    pages = [(f"history {w}", f"{url}?window={w}", {}) for w in ("1h", "24h", "7d")]
    one = urlencode({"window": "7d", "queue": biggest})
    return [*pages, (f"history 7d, queue {biggest}", f"{url}?{one}", {})]


def _jobs_pages(biggest: str, job) -> list:
    """The all-queues jobs page (`queues.reads.search_page`) with each filter, its page 2, and
    the counts of "all matching" confirmations."""
    url = reverse("dashboard:jobs")
    now = timezone.now()
    hour_ago, day_ago, days_ago = (
        (now - timedelta(hours=h)).strftime("%Y-%m-%dT%H:%M") for h in (1, 24, 48)
    )
    filters = [
        ("no filter", {}),
        ("by id", {"id": str(job)}),
        ("status Dead", {"status": "Dead"}),
        (f"queue {biggest}, status Failed", {"queue": biggest, "status": "Failed"}),
        ("priority Critical", {"priority": "4"}),
        ("tag eu (half)", {"tag": "eu"}),
        ("tag vip (1 in 200)", {"tag": "vip"}),
        ("tag vip, status Dead", {"tag": "vip", "status": "Dead"}),
        ("payload text", {"q": "user4242@"}),
        ("error text", {"error": "HTTP 503"}),
        ("created in the last hour", {"created_from": hour_ago}),
        ("finished in the last hour", {"finished_from": hour_ago}),
        (f"queue {biggest}", {"queue": biggest}),
        ("created 2 to 1 days ago", {"created_from": days_ago, "created_to": day_ago}),
        ("finished 2 to 1 days ago", {"finished_from": days_ago, "finished_to": day_ago}),
    ]
    pages = [(f"jobs page, {label}", f"{url}?{urlencode(query)}", {}) for label, query in filters]
    cursor = search_jobs(SearchFilter()).next_cursor
    pages.append(("jobs page, page 2", f"{url}?{urlencode({'after': cursor})}", {}))
    dead = {"status": "Dead"}
    cursor = search_jobs(SearchFilter.from_query(dead)).next_cursor
    pages.append(
        ("jobs page, status Dead, page 2", f"{url}?{urlencode({**dead, 'after': cursor})}", {})
    )
    confirm, htmx = reverse("dashboard:bulk-confirm"), {"HX-Request": "true"}
    for label, query in (("status Dead", {"status": "Dead"}), ("tag vip", {"tag": "vip"}),
                         (f"queue {biggest}, status Failed", filters[3][1]),
                         ("error text", {"error": "HTTP 503"}),
                         ("payload text", {"q": "user4242@"}),
                         ("priority Critical", {"priority": "4"})):  # fmt: skip
        pages.append((f"bulk count, {label}", confirm, htmx, {"action": "retry", **query}))
    return pages


def _pages():
    poll = {"HX-Request": "true"}
    biggest = (
        Job.objects.filter(status=JobStatus.PENDING).values_list("queue_name", flat=True).first()
        or Job.objects.values_list("queue_name", flat=True).first()
    )
    if biggest is None:
        raise CommandError("no jobs: run `manage.py filljobs` first")
    queue = reverse("dashboard:queue", args=[biggest])
    job = Job.objects.filter(queue_name=biggest).values_list("id", flat=True).first()
    pages = [
        ("overview", reverse("dashboard:overview"), {}),
        (
            "overview, live poll",
            reverse("dashboard:overview"),
            {**poll, "HX-Target": "overview-live"},
        ),
        (f"queue {biggest}", queue, {}),
        (f"queue {biggest}, live poll of the list", queue, {**poll, "HX-Target": "queue-jobs"}),
        (f"queue {biggest}, status Dead", f"{queue}?status=Dead", {}),
        (f"queue {biggest}, priority Critical", f"{queue}?priority=4", {}),
        (f"queue {biggest}, search payload text", f"{queue}?q=user4242@", {}),
        (f"queue {biggest}, search by id", f"{queue}?q={job}", {}),
        ("job", reverse("dashboard:job", args=[job]), {}),
        ("reaper", reverse("dashboard:reaper"), {}),
        ("batches and workflows", reverse("dashboard:batches"), {}),
        ("recurring", reverse("dashboard:recurring"), {}),
        ("workers", reverse("dashboard:workers"), {}),
        *(
            (f"error groups, {key}", f"{reverse('dashboard:errors')}?window={key}", {})
            for key in WINDOWS
        ),
        *_history_pages(biggest),
    ]
    # The second page of the queue: follow the first page's cursor.
    cursor = list_jobs(JobFilter(biggest)).next_cursor
    if cursor:
        pages.insert(5, (f"queue {biggest}, page 2", f"{queue}?{urlencode({'after': cursor})}", {}))
    pages += _tag_pages(biggest, queue, job)
    pages += _jobs_pages(biggest, job)
    batch = Batch.objects.values_list("id", flat=True).first()
    if batch:
        pages.append(("batch", reverse("dashboard:batch", args=[batch]), {}))
    workflow = Workflow.objects.values_list("id", flat=True).first()
    if workflow:
        pages.append(("workflow", reverse("dashboard:workflow", args=[workflow]), {}))
    return pages
