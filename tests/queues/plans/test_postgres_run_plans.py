"""PostgreSQL: the catalogue's statements that take a list of ids keep their generic plan.
psycopg prepares them; with the array bare (`= ANY(ids::uuid[])`), each execution's custom
plan knew the array's length and looked cheaper than the generic one, so the server planned
every execution anew (a start check's read cost three times the server CPU). Read from
`pg_prepared_statements` after the statements ran on one connection, as a worker's do."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.utils import timezone

from queues.api import DequeueOptions, Job, JobQueue
from queues.store import sql_store
from tests.conftest import unique_queue
from tests.pgbouncer.pooling import skip_through_a_pooler

pytestmark = pytest.mark.django_db(transaction=True)

OTHERS = 2000
RUNS = 12  # psycopg prepares at the 5th; the server tries 5 custom plans before choosing


def _claimed(count: int) -> list[Job]:
    """`count` jobs claimed from a table of some size, analysed: on a few rows every plan
    costs the same."""
    skip_through_a_pooler()
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL's plans")
    queue = JobQueue()
    queue_name = unique_queue("plans")
    queue.enqueue_many(Job(queue_name=unique_queue("plans_other")) for _ in range(OTHERS))
    queue.enqueue_many(Job(queue_name=queue_name) for _ in range(count))
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE queues_job")
    return queue.dequeue(queue_name, DequeueOptions.batch(count))


@pytest.mark.parametrize("name", ["startable_runs", "lock_runs", "start_runs"])
def test_the_statements_of_id_lists_are_planned_once(name):
    jobs = _claimed(30)
    store = sql_store("default")
    token, now = jobs[0].run_token, timezone.now()
    for i in range(RUNS):
        ids = [job.id for job in jobs[i % 3 * 5 : i % 3 * 5 + 2 + i % 4]]  # 2 to 5 ids
        if name == "startable_runs":
            assert set(store.startable_runs(ids)) == set(ids)
        elif name == "lock_runs":
            assert set(store.atomic(lambda ids=ids: store.lock_runs(ids, token))) == set(ids)
        else:
            assert set(store.atomic(lambda ids=ids: store.start_runs(ids, token, now))) == set(ids)
    # The statement's first two lines, up to its first parameter: each one's own.
    lines = [line for line in store.queries[name].splitlines() if not line.startswith("--")]
    start = "\n".join(lines[:2]).split("%(")[0]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT generic_plans, custom_plans FROM pg_prepared_statements"
            " WHERE starts_with(statement, %s)",
            [start],
        )
        rows = cursor.fetchall()
    assert len(rows) == 1, f"{name}: {rows}"
    ((generic, custom),) = rows
    assert generic >= RUNS - 5 - 1 and custom <= 5, (name, generic, custom)


def _explain(sql: str, params: dict, generic: bool) -> str:
    """The plan of `sql` with `params`: the custom plan of these values, or the generic plan
    that a prepared statement settles on (as psycopg's, after its fifth run)."""
    with connection.cursor() as cursor:
        if not generic:
            cursor.execute(f"EXPLAIN {sql}", params)
            return "\n".join(row[0] for row in cursor.fetchall())
        names = list(dict.fromkeys(re.findall(r"%\((\w+)\)s", sql)))
        numbered = re.sub(r"%\((\w+)\)s", lambda m: f"${names.index(m.group(1)) + 1}", sql)
        cursor.execute("SET plan_cache_mode = force_generic_plan")
        try:
            cursor.execute(f"PREPARE hammerweb_plan AS {numbered}")
            placeholders = ", ".join(["%s"] * len(names))
            cursor.execute(
                f"EXPLAIN EXECUTE hammerweb_plan({placeholders})", [params[n] for n in names]
            )
            return "\n".join(row[0] for row in cursor.fetchall())
        finally:
            cursor.execute("DEALLOCATE ALL")
            cursor.execute("RESET plan_cache_mode")


@pytest.mark.parametrize("generic", [False, True], ids=["custom", "generic"])
@pytest.mark.parametrize("name", ["complete_free_runs", "complete_runs"])
def test_the_completions_find_their_rows_by_the_primary_key(name, generic):
    """Joined to the JSON's rows alone (which the planner takes for 100), a completion of a
    few jobs scanned the whole table while it had a few thousand rows: a millisecond a
    statement. The ids as an array keep it on the primary key."""
    jobs = _claimed(5)
    store = sql_store("default")
    ids = store.adapt_ids([job.id for job in jobs])
    params = {"now": timezone.now(), "ids": store.id_list(ids), "check": store.uuids([])}
    tokens = store.adapt_ids([job.run_token for job in jobs])
    params["runs"] = store.results(ids, [None] * len(ids), tokens)
    plan = _explain(store.queries[name], params, generic)
    assert "on queues_job_pkey" in plan, plan
    assert not re.search(r"Seq Scan on queues_job\s", plan), plan
    # And the statement still does its work.
    if name == "complete_free_runs":
        written, _ = store.complete_free_runs(
            [(j.id, j.run_token, None) for j in jobs], timezone.now()
        )
        assert written == {job.id for job in jobs}
    else:
        runs = [(j.id, j.run_token, None) for j in jobs]
        assert set(store.complete_runs(runs, timezone.now())) == {j.id for j in jobs}
