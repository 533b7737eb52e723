"""One page of the all-queues jobs page: a `SearchFilter`'s jobs, newest first, by keyset
(created_at, id), never OFFSET and never a count. Filters no index answers are checked along
the index walk for at most `scan_window()` rows, and the page says down to where it looked;
`count_matches` bounds the confirmation's count the same way. See docs/design/reads.md."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime

from django.db import connections
from django.db.models import Exists, OuterRef, Q, QuerySet

from queues.models import Job, JobTag
from queues.reads.listing import decode_cursor, encode_cursor
from queues.reads.search import SearchFilter

PAGE_SIZE = 50
SCAN_WINDOW = 5_000
#: MariaDB reads a JSON column (LONGTEXT) from the clustered index row by row: see
#: `listing.MYSQL_SEARCH_WINDOW`, measured on 1,000,000 jobs in docs/explanations/search.md.
MYSQL_SCAN_WINDOW = 1_000


#: A tag's jobs are scattered over the table (one random read each, where the created order
#: reads neighbours): its window is this much smaller.
TAG_WINDOW_DIVISOR = 5


def scan_window(using: str = "default", tagged: bool = False) -> int:
    window = MYSQL_SCAN_WINDOW if connections[using].vendor == "mysql" else SCAN_WINDOW
    return max(1, window // TAG_WINDOW_DIVISOR) if tagged else window


#: The "all N matching" confirmation of a filter that reads rows counts the newest this many
#: jobs only. An exact count of an error text read 1,000,000 rows: 218 ms on PostgreSQL on a
#: quiet machine, over a second on SQLite and MariaDB; the newest 100,000 along the created
#: index (a random read each) took 370 ms on SQLite at load 8; MariaDB's reads of 10,000
#: missed its (shared, 128 MB) buffer pool one in three: 850 ms (docs/benchmarks/journal.md).
COUNT_WINDOW = 20_000
MYSQL_COUNT_WINDOW = 2_000


def count_window(using: str = "default") -> int:
    return MYSQL_COUNT_WINDOW if connections[using].vendor == "mysql" else COUNT_WINDOW


@dataclass
class MatchCount:
    """How many jobs a filter matches: exact, or (`window` set) among the newest `window`
    jobs of its walk only, those created at `down_to` or later: a lower bound."""

    n: int
    window: int = 0
    down_to: datetime | None = None


def count_matches(flt: SearchFilter, using: str = "default") -> MatchCount:
    """The confirmation's count: exact where an index answers the filter, else bounded by
    `count_window()` rows of the page's walk (the newest), and saying so."""
    rows = flt.rows(using)
    window = count_window(using)
    if flt.tag and not flt.problems and flt.query().keys() <= {"tag", "queue"}:
        # A tag (of a queue): its rows, one per job (the unique (job, tag)), counted along
        # its index alone; through the jobs, each would be looked up by primary key too.
        tagged = JobTag.objects.using(using).filter(tag=flt.tag)
        if flt.queue:
            tagged = tagged.filter(queue_name=flt.queue)
        return MatchCount(tagged.count())
    if flt.problems or flt.job_id or not flt.reads_rows:
        return MatchCount(rows.count())
    edge = list(_spine(flt, None, using)[window - 1 : window])
    if not edge:  # the whole walk is within the window: the count is exact
        return MatchCount(rows.count())
    when, pk = edge[0]
    rows = rows.filter(created_at__gte=when).exclude(created_at=when, id__lt=pk)
    return MatchCount(rows.count(), window, when)


@dataclass
class SearchPage:
    jobs: list[Job] = field(default_factory=list)
    next_cursor: str = ""
    #: Set when a page looked at a window of rows only: how many, and the oldest one's time.
    scanned: int = 0
    scanned_to: datetime | None = None


def before(rows: QuerySet, after, created: str = "created_at", ident: str = "id") -> QuerySet:
    """`rows` after the cursor's position, newest first: the `<=` bound is what the index
    ranges over, the OR only breaks ties."""
    when, pk = after
    return rows.filter(**{f"{created}__lte": when}).filter(
        Q(**{f"{created}__lt": when}) | Q(**{f"{ident}__lt": pk})
    )


def search_jobs(
    flt: SearchFilter, cursor: str = "", using: str = "default", size: int = PAGE_SIZE
) -> SearchPage:
    if flt.problems:
        return SearchPage()
    rows = flt.rows(using)
    if flt.job_id:
        return SearchPage(list(rows[:1]))
    after = decode_cursor(cursor) if cursor else None
    if after:
        rows = before(rows, after)
    newest = ("-created_at", "-id")
    if not flt.scans:
        if flt.tag:  # the tags' index, in page order
            ids = list(_spine(flt, after, using).values_list("job_id", flat=True)[: size + 1])
            rows = Job.objects.using(using).filter(id__in=ids)
        return _page(list(rows.order_by(*newest)[: size + 1]), size)
    window = scan_window(using, tagged=bool(flt.tag))
    if flt.tag:
        # The window's jobs by primary key, their ids read along the tag's index: bounded
        # by created_at alone, a database walks every job of the window's time range (200
        # times the window for a tag on 1 job in 200) or checks all the tag's jobs. The
        # rest of the filter is asked of each of those rows (EXISTS on the same primary
        # key): compared bare, SQLite's planner without statistics reads every job of the
        # status from its index instead.
        spine = list(_spine(flt, after, using)[:window])
        edge = spine[-1:] if len(spine) == window else []
        rest = replace(flt, tag="").rows(using).filter(pk=OuterRef("pk"))
        rows = Job.objects.using(using).filter(id__in=[pk for _, pk in spine]).filter(Exists(rest))
    else:
        edge = list(_spine(flt, after, using)[window - 1 : window])
        if edge:
            when, pk = edge[0]
            rows = rows.filter(created_at__gte=when).exclude(created_at=when, id__lt=pk)
    page = _page(list(rows.order_by(*newest)[: size + 1]), size)
    if edge and not page.next_cursor:
        # Fewer than a page among the window: go on from its oldest row (the cursor's
        # position is exclusive, so this row itself, already looked at, is not read again).
        page.next_cursor = f"{edge[0][0].isoformat()}~{edge[0][1].hex}"
        page.scanned, page.scanned_to = window, edge[0][0]
    return page


def _spine(flt: SearchFilter, after, using: str) -> QuerySet:
    """The index walk of the page, newest first, as (created_at, id) pairs: the tag's rows
    of `JobTag` (which carry their job's created_at), or the jobs."""
    if flt.tag:
        rows = JobTag.objects.using(using).filter(tag=flt.tag)
        ident = "job_id"
    else:
        rows = Job.objects.using(using).all()
        ident = "id"
    if flt.created_from:
        rows = rows.filter(created_at__gte=datetime.fromisoformat(flt.created_from))
    if flt.created_to:
        rows = rows.filter(created_at__lt=datetime.fromisoformat(flt.created_to))
    if after:
        rows = before(rows, after, ident=ident)
    return rows.order_by("-created_at", f"-{ident}").values_list("created_at", ident)


def _page(found: list[Job], size: int) -> SearchPage:
    page = SearchPage(found[:size])
    if len(found) > size:
        page.next_cursor = encode_cursor(page.jobs[-1])
    return page
