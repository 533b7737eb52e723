"""The trigger-kept failed attempts per minute (queues.store.counters.attempt_counts) and the
history that reads them (queues.store.counters.rollup): exact whoever ends an attempt (a handler's
failure, the reaper, an operator), from several connections at once; the history never reads the
error history's rows; the migration's backfill and the pruner. (A real worker: tests/workers.)"""

from __future__ import annotations

import random
from collections import defaultdict
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from queues.api import DequeueOptions, Job, JobOutcome, JobQueue, JobStatus, MockClock
from queues.enums import FAILURE_STATUSES
from queues.models import AttemptCount, FailedAttempt
from queues.models import Job as JobRow
from queues.ops.maintenance import Pruner
from queues.reads import trends
from queues.store.counters import attempt_counts, rollup
from queues.store.counters.completions import minute_of
from tests.conftest import ROOT
from tests.queues.conftest import unique_queue
from tests.queues.engine.test_concurrency import in_threads

T0 = datetime(2026, 11, 29, 21, 5, 7, 250_000, tzinfo=UTC)
LEASE = timedelta(seconds=60)
FAR = timedelta(days=30)


def from_history(names) -> dict[tuple[str, datetime], list[int]]:
    """[failed, retried] per (queue, minute), counted here in Python from the error
    history's rows: the oracle the counters must equal."""
    exact: dict = defaultdict(lambda: [0, 0])
    rows = FailedAttempt.objects.filter(job__queue_name__in=names)
    for queue, at, status in rows.values_list("job__queue_name", "failed_at", "status"):
        if status in FAILURE_STATUSES:
            exact[queue, minute_of(at)][0] += 1
        elif status in (JobStatus.PENDING, JobStatus.RETRYING):
            exact[queue, minute_of(at)][1] += 1
    return dict(exact)


def counted(names, around: datetime) -> dict[tuple[str, datetime], list[int]]:
    """[failed, retried] per (queue, minute) as the history reads them (the counters)."""
    raw = rollup.raw_counts(around - FAR, around + FAR, "minute")
    return {key: [f, r] for key, (_, f, r) in raw.items() if key[0] in names and (f or r)}


def claim(queue, name, n=1):
    return queue.dequeue(name, DequeueOptions.batch(n).with_lease_duration(LEASE))


@pytest.mark.django_db
def test_failures_and_retries_are_counted_in_the_minute_of_the_attempt():
    name, clock = unique_queue("ac"), MockClock(T0)
    queue = JobQueue(clock=clock)
    queue.enqueue_many([Job(queue_name=name, max_attempts=2) for _ in range(3)])
    first, second, third = claim(queue, name, 3)
    queue.finish_job_run(first, JobOutcome.failed("retried: attempt 1 of 2"))
    queue.finish_job_run(second, JobOutcome.dead("poison"))
    clock.advance(timedelta(seconds=53))  # 21:06:00.25
    queue.finish_job_run(third, JobOutcome.timed_out("too slow"))  # attempt 1 of 2: retried
    queue.enqueue(Job(queue_name=name))
    (done,) = claim(queue, name)
    queue.finish_job_run(done, JobOutcome.completed())
    at_21_05, at_21_06 = minute_of(T0), minute_of(T0) + timedelta(minutes=1)
    assert counted([name], T0) == {(name, at_21_05): [1, 1], (name, at_21_06): [0, 1]}
    assert counted([name], T0) == from_history([name])
    statuses = AttemptCount.objects.filter(queue_name=name).values_list("status", flat=True)
    assert sorted(statuses) == ["Dead", "Pending", "Pending"]


def totals(names, around) -> dict[str, list[int]]:
    result: dict = defaultdict(lambda: [0, 0])
    for (queue, _), (failed, retried) in counted(names, around).items():
        result[queue][0] += failed
        result[queue][1] += retried
    return dict(result)


@pytest.mark.django_db
def test_the_reapers_rescues_and_an_operators_retry_of_a_running_job_are_counted():
    reaped, retried, cancelled, failed = names = [unique_queue(f"ac_{n}") for n in range(4)]
    clock = MockClock(T0)
    queue = JobQueue(clock=clock)
    queue.enqueue_many([Job(queue_name=reaped, max_attempts=1), Job(queue_name=reaped)])
    claim(queue, reaped, 2)  # leases that expire: one job dies (1 attempt), one comes again
    clock.advance(LEASE * 2)
    assert queue.requeue_stale_jobs(ran_by="test")
    for name in (retried, cancelled, failed):
        queue.enqueue(Job(queue_name=name, max_attempts=1))
    queue.retry_job(claim(queue, retried)[0].id)  # an operator's retry of a running job
    queue.cancel_job(claim(queue, cancelled)[0].id)  # a running job cancelled: Failed
    (run,) = claim(queue, failed)
    queue.finish_job_run(run, JobOutcome.failed("boom"))
    queue.retry_job(run.id)  # the retry of a failed job: no attempt ended, nothing counted
    assert counted(names, T0) == from_history(names)
    assert totals(names, T0) == {
        reaped: [1, 1],
        retried: [0, 1],
        cancelled: [1, 0],
        failed: [1, 0],
    }


@pytest.mark.django_db
def test_writes_outside_the_engine_are_counted():
    name = unique_queue("ac_orm")
    job = JobRow.objects.create(queue_name=name, status=JobStatus.DEAD)
    FailedAttempt.objects.bulk_create(
        FailedAttempt(job=job, attempt=i, failed_at=T0, ended_by="error", status=status)
        for i, status in enumerate(["Dead", "Pending", "Pending", "Failed"], start=1)
    )
    assert counted([name], T0) == {(name, minute_of(T0)): [2, 2]}


def test_concurrent_failures_from_several_connections_give_the_exact_sum(db_queue):
    names = [unique_queue("ac_race_a"), unique_queue("ac_race_b")]
    for name in names:
        db_queue.enqueue_many(Job(queue_name=name, max_attempts=3) for _ in range(150))

    def churn(seed):
        rng = random.Random(seed)
        for _ in range(30):
            db_queue.clock.advance(timedelta(seconds=rng.randint(0, 15)))
            runs = claim(db_queue, rng.choice(names), rng.randint(1, 6))
            outcomes = [
                (run, rng.choice([JobOutcome.failed("x"), JobOutcome.dead("y")])) for run in runs
            ]
            db_queue.finish_job_runs(outcomes)  # a write of many failures: one INSERT

    in_threads([lambda s=s: churn(s) for s in range(4)])
    exact = from_history(names)
    assert counted(names, db_queue.now()) == exact
    assert len(exact) > 5 and sum(f + r for f, r in exact.values()) > 100
    shards = set(AttemptCount.objects.filter(queue_name__in=names).values_list("shard", flat=True))
    if connection.vendor != "sqlite":  # one writer at a time there: one shard
        assert len(shards) > 1, "each connection adds to its own shard"


@pytest.mark.django_db
def test_the_history_reads_the_counters_never_the_error_history():
    name, clock = unique_queue("ac_reads"), MockClock(T0)
    queue = JobQueue(clock=clock)
    queue.enqueue_many([Job(queue_name=name, max_attempts=1) for _ in range(4)])
    for run in claim(queue, name, 4):
        queue.finish_job_run(run, JobOutcome.failed("boom"))
    clock.advance(timedelta(hours=2))
    with CaptureQueriesContext(connection) as reads:
        hour = trends.history(trends.WINDOWS["1h"], T0, [name])[0]
        day = trends.history(trends.WINDOWS["24h"], clock.now(), [name])[0]
        assert rollup.roll_up(clock.now()) >= 1
        week = trends.history(trends.WINDOWS["7d"], clock.now(), [name])[0]
    assert hour.totals == day.totals == week.totals == [0, 4, 0]
    sql = " ".join(q["sql"].lower() for q in reads.captured_queries)
    assert "attemptcount" in sql
    assert "failedattempt" not in sql, "the error history's rows are never read"


@pytest.mark.django_db
def test_the_backfill_counts_the_last_day_of_the_existing_history():
    name, clock = unique_queue("ac_backfill"), MockClock(T0)
    queue = JobQueue(clock=clock)
    queue.enqueue_many([Job(queue_name=name, max_attempts=2) for _ in range(3)])
    old, kept, recent = claim(queue, name, 3)
    queue.finish_job_run(old, JobOutcome.failed("before the day"))
    clock.advance(timedelta(hours=2))
    queue.finish_job_run(kept, JobOutcome.dead("x"))
    clock.advance(timedelta(minutes=7))
    queue.finish_job_run(recent, JobOutcome.failed("y"))
    before = counted([name], T0)
    AttemptCount.objects.all().delete()  # as before the migration: no counters
    attempt_counts.recount(T0 + timedelta(hours=1, seconds=30))
    after = counted([name], T0)
    assert after == {key: value for key, value in before.items() if key[1] > T0}
    assert sum(f + r for f, r in after.values()) == 2
    assert set(AttemptCount.objects.filter(queue_name=name).values_list("shard", flat=True)) == {0}


@pytest.mark.django_db
def test_the_pruner_deletes_the_minutes_older_than_a_day_after_rolling_them_up():
    name, clock = unique_queue("ac_prune"), MockClock(T0)
    queue = JobQueue(clock=clock)
    queue.enqueue_many([Job(queue_name=name, max_attempts=1) for _ in range(2)])
    first, second = claim(queue, name, 2)
    queue.finish_job_run(first, JobOutcome.failed("x"))
    clock.advance(timedelta(hours=23))
    queue.finish_job_run(second, JobOutcome.failed("y"))
    assert Pruner(queue, older_than=None).run_once().attempt_counts == 0
    clock.advance(timedelta(hours=1, minutes=30))  # the first minute is older than a day
    result = Pruner(queue, older_than=None).run_once()
    assert result.attempt_counts >= 1  # other tests' old minutes may go too
    assert AttemptCount.objects.filter(queue_name=name).count() == 1
    week = trends.history(trends.WINDOWS["7d"], clock.now(), [name])[0]
    assert week.totals == [0, 2, 0], "the pruned minute's hour is rolled up"


REMAKE = """
import django
django.setup()
from django.core.management import call_command
from django.core.management.sql import emit_post_migrate_signal, emit_pre_migrate_signal
from django.db import connection, models
call_command("migrate", verbosity=0)
from queues.models import AttemptCount, FailedAttempt, Job
# What a later migration that alters the jobs table does on SQLite: rebuild it.
emit_pre_migrate_signal(0, False, "default")
field = models.CharField(max_length=300)
field.set_attributes_from_name("queue_name")
with connection.schema_editor() as editor:
    editor.alter_field(Job, Job._meta.get_field("queue_name"), field)
emit_post_migrate_signal(0, False, "default")
job = Job.objects.create(queue_name="after-rebuild", status="Dead")
FailedAttempt.objects.create(job=job, attempt=1, failed_at=job.created_at, ended_by="error",
                             status="Dead")
print(AttemptCount.objects.get(queue_name="after-rebuild").n)
"""


def test_a_later_migration_that_rebuilds_the_jobs_table_on_sqlite_keeps_the_trigger(tmp_path):
    """SQLite refuses to rename a rebuilt queues_job while another table's trigger names
    it: the trigger is off during migrations and back after them."""
    import os
    import subprocess
    import sys

    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{tmp_path / 'rebuild.sqlite3'}",
        "DJANGO_SETTINGS_MODULE": "hammerweb.settings",
    }
    root = str(ROOT)
    done = subprocess.run(
        [sys.executable, "-c", REMAKE], cwd=root, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "1"
