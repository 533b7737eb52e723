"""PostgreSQL: the catalogue's statements that take a list of ids keep their generic plan.
psycopg prepares them; with the array bare (`= ANY(ids::uuid[])`), each execution's custom
plan knew the array's length and looked cheaper than the generic one, so the server planned
every execution anew (a start check's read cost three times the server CPU). Read from
`pg_prepared_statements` after the statements ran on one connection, as a worker's do."""

from __future__ import annotations

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


@pytest.mark.parametrize("name", ["startable_runs", "lock_runs", "start_runs"])
def test_the_statements_of_id_lists_are_planned_once(name):
    skip_through_a_pooler()
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL's plan cache")
    queue = JobQueue()
    queue_name = unique_queue("plans")
    # A table of some size, analysed: on a few rows either plan costs the same.
    queue.enqueue_many(Job(queue_name=unique_queue("plans_other")) for _ in range(OTHERS))
    queue.enqueue_many(Job(queue_name=queue_name) for _ in range(30))
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE queues_job")
    jobs = queue.dequeue(queue_name, DequeueOptions.batch(30))
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
