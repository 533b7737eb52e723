"""The admin's filters of jobs by tag and by queue, and what keeps its changelist fast on a
million jobs: a tag is typed, not listed; a tagged page is read in order along the tags'
index; its count stops at COUNT_CAP. See docs/design/tables.md."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.admin.views.main import ORDER_VAR, PAGE_VAR, ChangeList
from django.core.paginator import Paginator
from django.utils.functional import cached_property

from queues.enums import JobPriority
from queues.exceptions import InvalidJob
from queues.reads.tag_plans import has_tag, status_is_rarer
from queues.store.counters.counts import counts_by_queue
from queues.tags import check_tag

#: The admin's parameters of the status and priority filters (Django's for choices).
STATUS_VAR, PRIORITY_VAR = "status__exact", "priority__exact"
PRIORITIES = {str(int(p)) for p in JobPriority}

#: The most rows the job changelist counts for its pages (it shows "1000+" past that: 20 pages).
COUNT_CAP = 1_000


class AtLeast(int):
    """A count that stopped at its cap: shown as "1000+", computed with as 1000."""

    def __str__(self) -> str:
        return f"{int(self)}+"

    __html__ = __str__


class CappedPaginator(Paginator):
    """Counts at most COUNT_CAP + 1 rows (`SELECT COUNT(*) FROM (... LIMIT n)`)."""

    @cached_property
    def count(self) -> int:
        # Unordered: the database may count along whichever index suits the filters (in
        # the page's order, a rare status among a common tag's jobs read them all).
        n = self.object_list.order_by()[: COUNT_CAP + 1].count()
        return AtLeast(COUNT_CAP) if n > COUNT_CAP else n


class QueueFilter(admin.SimpleListFilter):
    """By queue, the queues listed from the trigger-kept counts (a few rows): Django's own
    filter of a column lists its values with a `SELECT DISTINCT` over every job (0.7 s on a
    million jobs on PostgreSQL)."""

    title = "queue name"
    parameter_name = "queue_name"

    def lookups(self, request, model_admin):
        return [(name, name) for name in sorted(counts_by_queue())]

    def queryset(self, request, queryset):
        name = self.value()
        return queryset if name is None else queryset.filter(queue_name=name)


class TagFilter(admin.SimpleListFilter):
    """Jobs that have the tag typed in (exactly); a tag no job can have matches none."""

    title = "tag"
    parameter_name = "tag"
    template = "admin/queues/tag_filter.html"

    def lookups(self, request, model_admin):
        return []

    def has_output(self) -> bool:
        return True

    def choices(self, changelist):
        # The other filters of the page, kept by the text box's form.
        kept = [
            (name, value)
            for name, values in changelist.params.items()
            if name not in (self.parameter_name, PAGE_VAR)
            for value in (values if isinstance(values, list) else [values])
        ]
        yield {"value": self.value() or "", "kept": kept, "selected": bool(self.value())}

    def queryset(self, request, queryset):
        tag = (self.value() or "").strip()
        if not tag:
            return queryset
        try:
            check_tag(tag)
        except InvalidJob:
            return queryset.none()
        queue = request.GET.get(QueueFilter.parameter_name) or None
        status = request.GET.get(STATUS_VAR)
        if status and status_is_rarer(tag, status, queue):
            # Along the status (queues.reads.tag_plans), newest first by the jobs' own column.
            request.hammerweb_tag_order = ("-created_at", "-id")
            return queryset.filter(has_tag(tag))
        rows = {"tag_rows__tag": tag}
        priority = request.GET.get(PRIORITY_VAR, "")
        if priority in PRIORITIES:
            # The tag row's copy as well: the (queue_name, tag, priority, ...) index.
            rows["tag_rows__priority"] = int(priority)
        if queue:
            # The queue again, on the tags' side (one filter: one join), so that the
            # (queue_name, tag, created_at) index can serve a page of one queue.
            rows["tag_rows__queue_name"] = queue
        return queryset.filter(**rows)


class TaggedChangeList(ChangeList):
    """Filtered by a tag and not sorted by a column: newest first by the tags' index."""

    def get_queryset(self, request, exclude_parameters=None):
        rows = super().get_queryset(request, exclude_parameters)
        tag = self.params.get(TagFilter.parameter_name)
        if tag and ORDER_VAR not in self.params:
            # The same join as the filter's (an order_by reuses it): one row per job.
            order = ("-tag_rows__created_at", "-tag_rows__job_id")
            rows = rows.order_by(*getattr(request, "hammerweb_tag_order", order))
        return rows
