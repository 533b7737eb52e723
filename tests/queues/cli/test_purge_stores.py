"""`manage.py jobs purge`'s code (`queues.cli.purge.purge`) on the database and in memory
alike: it counts, reads and deletes only through the queue's store, so a `TestQueue` is
purged as the database is, a filter narrowing single jobs and groups going whole."""

from __future__ import annotations

from datetime import timedelta

from queues.api import Job, JobBatch, JobOutcome
from queues.cli import purge
from queues.cli.selection import Selection
from queues.models import Batch
from queues.options import DequeueOptions
from queues.store import Match
from tests.queues.conftest import unique_queue
from tests.queues.support.jobs_helpers import finished

LONG_AGO = timedelta(days=31)


class Lines(list):
    """A command's stdout or stderr: the lines written."""

    def write(self, text: str) -> None:
        self.append(text)


class Command:
    def __init__(self) -> None:
        self.stdout, self.stderr = Lines(), Lines()


def run(on, **options) -> Command:
    """`jobs purge --older-than 30d --yes` with `options` on the queue `on`: its output."""
    given = {"older_than": "30d", "batch_size": None, "queue": None, "status": None}
    command = Command()
    purge.purge(command, on, {**given, "dry_run": False, "yes": True, **options})
    return command


def test_a_filtered_purge_counts_then_deletes_only_its_jobs(queue):
    mine, other = unique_queue("cli_purge_store"), unique_queue("cli_purge_store")
    completed = finished(queue, mine, 2)
    dead = finished(queue, mine, 1, JobOutcome.dead("no"))
    elsewhere = finished(queue, other, 1)
    queue.clock.advance(LONG_AGO)
    recent = finished(queue, mine, 1)
    pending = queue.enqueue(Job(queue_name=mine))

    seen = run(queue, queue=mine, status=["dead"], dry_run=True)
    assert seen.stdout[0].startswith("1 jobs that finished before")
    assert seen.stdout[0].endswith(f"(queue {mine!r}, status Dead)")
    assert seen.stdout[-1] == "dry run: nothing deleted"
    assert all(queue.get_job(job_id) for job_id in [*completed, *dead])

    assert run(queue, queue=mine, status=["dead"]).stdout[-1] == "deleted 1 jobs"
    assert queue.get_job(dead[0]) is None
    assert run(queue, queue=mine, batch_size=1).stdout[-1] == "deleted 2 jobs"
    left = {job.id for job in queue.store.find_jobs(Match(queue_name=mine))}
    assert left == {*recent, pending}
    assert queue.get_job(elsewhere[0]) is not None


def test_an_unfiltered_purge_deletes_finished_groups_whole(queue):
    name, busy_name = unique_queue("cli_purge_store"), unique_queue("cli_purge_store")
    done_id = queue.enqueue_batch(JobBatch("done", jobs=[Job(queue_name=name) for _ in "ab"]))
    runs = queue.dequeue(name, DequeueOptions(batch_size=10))
    queue.finish_job_runs([(run, JobOutcome.completed()) for run in runs])
    finished(queue, name, 1)  # a job of no group
    busy_id = queue.enqueue_batch(JobBatch("busy", jobs=[Job(queue_name=busy_name)]))
    queue.clock.advance(LONG_AGO)

    seen = run(queue, dry_run=True)
    assert seen.stdout[0].startswith("1 jobs that finished before")
    assert seen.stdout[0].endswith(", and 1 batches and workflows with their 2 jobs")

    seen = run(queue)
    assert seen.stdout[-1] == "deleted 1 jobs, 1 batches and workflows (2 jobs)"
    assert queue.store.get_group(Batch, done_id) is None
    assert queue.store.find_jobs(Match(queue_name=name)) == []
    assert queue.store.get_group(Batch, busy_id) is not None  # its job never ran


def test_the_filtered_rule_as_a_query_and_as_a_test_of_one_row_agree(queue):
    mine, other = unique_queue("cli_purge_rule"), unique_queue("cli_purge_rule")
    dead = finished(queue, mine, 1, JobOutcome.dead("no"))
    finished(queue, mine, 1)
    finished(queue, other, 1, JobOutcome.dead("no"))
    queue.enqueue(Job(queue_name=mine))
    queue.clock.advance(LONG_AGO)
    rule = purge.Filtered(queue.now(), Selection(queue=mine, statuses=["Dead"]))
    rows = [job for q in (mine, other) for job in queue.store.find_jobs(Match(queue_name=q))]
    assert len(rows) == 4
    selected = set(queue.store.select_ids(rule, among=[job.id for job in rows]))
    assert selected == {job.id for job in rows if rule.matches(job)} == set(dead)
    assert queue.store.count_selected(rule) == 1


def test_a_purge_by_tag_deletes_only_the_tagged_jobs_and_leaves_groups_alone(queue):
    name = unique_queue("cli_purge_tag")
    queue.enqueue_many([Job(queue_name=name, payload={"n": i}, tags=["old-import"] if i else [])
                        for i in range(3)])
    runs = queue.dequeue(name, DequeueOptions(batch_size=3))
    queue.finish_job_runs([(run, JobOutcome.completed()) for run in runs])
    tagged = [run.id for run in runs if run.tags]
    untagged = [run.id for run in runs if not run.tags]
    batch = queue.enqueue_batch(JobBatch("tagless", [Job(queue_name=name)]))
    done = queue.dequeue(name, DequeueOptions(batch_size=1))
    queue.finish_job_runs([(run, JobOutcome.completed()) for run in done])
    queue.clock.advance(LONG_AGO)

    seen = run(queue, tag="old-import", dry_run=True)
    assert seen.stdout[0].startswith("2 jobs that finished before")
    assert seen.stdout[0].endswith("(tag 'old-import')")
    assert run(queue, tag="old-import").stdout[-1] == "deleted 2 jobs"
    assert [queue.get_job(job_id) for job_id in tagged] == [None, None]
    assert all(queue.get_job(job_id) for job_id in untagged)
    assert queue.store.find_jobs(Match(batch_id=batch))  # a filter keeps groups whole
