"""Tags and metadata on the database of the run and on TestQueue: stored, checked at
enqueue, returned by every read, accepted by every way of enqueueing, and filterable."""

from __future__ import annotations

from datetime import timedelta

import pytest

from queues.api import (
    DequeueOptions,
    InvalidJob,
    InvalidTags,
    Job,
    JobBatch,
    JobGroup,
    JobOutcome,
    JobQueue,
    MockClock,
)
from queues.models import JobTag
from queues.ops.maintenance import Pruner
from queues.tags import MAX_TAG_LENGTH, MAX_TAGS
from queues.validation import MAX_PAYLOAD_BYTES
from tests.queues.conftest import unique_queue

META = {"customer": 42, "region": "eu-west", "trace": {"id": "abc", "sampled": True}}


def tagged(name: str, tags=("billing", "eu"), **fields) -> Job:
    return Job(queue_name=name, tags=list(tags), **fields)


def test_tags_and_meta_come_back_from_get_job_and_dequeue(queue):
    name = unique_queue("tags_read")
    job_id = queue.enqueue(tagged(name, meta=META, payload={"invoice": 1}))
    stored = queue.get_job(job_id)
    assert stored.tags == ["billing", "eu"] and stored.meta == META
    claimed = queue.dequeue_one(name)
    assert claimed.id == job_id and claimed.tags == ["billing", "eu"] and claimed.meta == META
    queue.finish_job_run(claimed, JobOutcome.completed())
    assert queue.get_job(job_id).tags == ["billing", "eu"], "a run leaves the tags alone"


def test_a_job_without_tags_has_an_empty_list_and_an_empty_meta(queue):
    name = unique_queue("tags_none")
    job_id = queue.enqueue(Job(queue_name=name))
    job = queue.get_job(job_id)
    assert job.tags == [] and job.meta == {}
    assert queue.get_tagged_jobs("billing", name) == []


def test_a_tag_given_twice_is_kept_once_in_the_order_given(queue):
    name = unique_queue("tags_twice")
    job_id = queue.enqueue(tagged(name, tags=("eu", "billing", "eu")))
    assert queue.get_job(job_id).tags == ["eu", "billing"]
    assert [j.id for j in queue.get_tagged_jobs("eu", name)] == [job_id]


def test_filtering_by_tag_is_exact_and_per_queue(queue):
    name, other = unique_queue("tags_filter"), unique_queue("tags_filter_other")
    eu = queue.enqueue(tagged(name, tags=["eu"]))
    upper = queue.enqueue(tagged(name, tags=["EU"]))
    emoji = queue.enqueue(tagged(name, tags=["region-😀"]))
    queue.enqueue(tagged(name, tags=["region-🐍"]))
    elsewhere = queue.enqueue(tagged(other, tags=["eu"]))
    assert [j.id for j in queue.get_tagged_jobs("eu", name)] == [eu]
    assert [j.id for j in queue.get_tagged_jobs("EU", name)] == [upper]
    assert [j.id for j in queue.get_tagged_jobs("region-😀", name)] == [emoji]
    assert {j.id for j in queue.get_tagged_jobs("eu")} >= {eu, elsewhere}
    assert len(queue.get_tagged_jobs("eu", name, limit=None)) == 1


def test_enqueue_many_batches_and_workflows_take_tags(queue):
    name = unique_queue("tags_groups")
    many = queue.enqueue_many([tagged(name, tags=["bulk"]), Job(queue_name=name)])
    batch = queue.enqueue_batch(JobBatch("nightly", jobs=[tagged(name, tags=["batch"])]))
    first = tagged(name, tags=["flow", "step-1"], meta={"step": 1})
    second = tagged(name, tags=["flow"]).depends_on_job(first)
    queue.enqueue_workflow(JobGroup("signup").add_job(first).add_job(second))
    assert [j.id for j in queue.get_tagged_jobs("bulk", name)] == [many[0]]
    assert [j.tags for j in queue.get_batch_jobs(batch)] == [["batch"]]
    assert {j.id for j in queue.get_tagged_jobs("flow", name)} == {first.id, second.id}
    assert queue.get_job(first.id).meta == {"step": 1}


@pytest.mark.parametrize(
    "tags",
    [
        "billing",  # a string is not a list of tags
        [42],
        [None],
        [""],
        ["   "],
        [" eu"],
        ["eu\n"],
        ["a\x00b"],
        ["a\ud800b"],
        ["a\u200bb"],  # a zero-width space: shows as nothing
        ["x" * (MAX_TAG_LENGTH + 1)],
        [f"t{i}" for i in range(MAX_TAGS + 1)],
        {"billing": True},
        42,
    ],
    ids=repr,
)
def test_malformed_tags_are_refused_and_nothing_is_written(queue, tags):
    name = unique_queue("tags_bad")
    with pytest.raises(InvalidTags) as refused:
        queue.enqueue_many([Job(queue_name=name), Job(queue_name=name, tags=tags)])
    assert isinstance(refused.value, InvalidJob) and str(refused.value)
    assert sum(queue.get_job_counts_by_status(name).values()) == 0


def test_the_longest_tag_and_the_most_tags_are_taken(queue):
    name = unique_queue("tags_limits")
    tags = ["x" * MAX_TAG_LENGTH] + [f"t{i}" for i in range(MAX_TAGS - 1)]
    job_id = queue.enqueue(tagged(name, tags=tags))
    assert queue.get_job(job_id).tags == tags
    assert [j.id for j in queue.get_tagged_jobs("x" * MAX_TAG_LENGTH, name)] == [job_id]


@pytest.mark.parametrize(
    "meta",
    [
        ["a", "list"],
        "text",
        {1: "an int key"},
        {"nul": "a\x00b"},
        {"surrogate": "\udc00"},
        {"big": "x" * MAX_PAYLOAD_BYTES},
        {"nan": float("nan")},
        {"deep": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]},
        {"object": object()},
    ],
    ids=lambda meta: repr(meta)[:40],
)
def test_malformed_meta_is_refused_and_nothing_is_written(queue, meta):
    name = unique_queue("meta_bad")
    with pytest.raises(InvalidTags):
        queue.enqueue(Job(queue_name=name, meta=meta))
    assert sum(queue.get_job_counts_by_status(name).values()) == 0


def test_a_malformed_tag_asked_for_is_refused(queue):
    with pytest.raises(InvalidTags):
        queue.get_tagged_jobs("a\x00b")
    with pytest.raises(InvalidJob):
        queue.get_tagged_jobs("eu", queue_name="")


def test_deleting_a_job_deletes_its_tags(queue):
    name = unique_queue("tags_delete")
    gone, kept = queue.enqueue_many([tagged(name), tagged(name)])
    queue.delete_job(gone)
    assert [j.id for j in queue.get_tagged_jobs("billing", name)] == [kept]


# The tags' table ------------------------------------------------------------------------------
pytestmark_db = pytest.mark.django_db(transaction=True)


@pytestmark_db
def test_each_tag_is_a_row_with_the_jobs_queue_and_time_and_goes_with_its_job():
    name = unique_queue("tags_rows")
    queue = JobQueue()
    job_id = queue.enqueue(tagged(name))
    job = queue.get_job(job_id)
    rows = JobTag.objects.filter(job_id=job_id).order_by("tag")
    assert [(r.tag, r.queue_name, r.created_at) for r in rows] == [
        ("billing", name, job.created_at),
        ("eu", name, job.created_at),
    ]
    queue.delete_job(job_id)
    assert not JobTag.objects.filter(job_id=job_id).exists()


@pytestmark_db
def test_pruning_finished_jobs_removes_their_tags():
    clock = MockClock()
    queue = JobQueue(clock=clock)
    name = unique_queue("tags_prune")
    queue.enqueue(tagged(name))
    done = queue.dequeue(name, DequeueOptions.batch(1))[0]
    queue.enqueue(tagged(name, tags=["live"]))
    queue.finish_job_run(done, JobOutcome.completed())
    clock.advance(timedelta(days=8))
    assert Pruner(queue, older_than=timedelta(days=7)).run_once().jobs == 1
    assert not JobTag.objects.filter(job_id=done.id).exists()
    assert list(JobTag.objects.filter(queue_name=name).values_list("tag", flat=True)) == ["live"]
