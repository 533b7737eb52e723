"""`Job(...)` from keywords skips Django's per-field loop (queues/models/jobs.py): the job it
builds must be the one `Model.__init__` builds, and every case that needs Django's own path
(a related object, a property, a wrong keyword, a `pre_init`/`post_init` receiver) takes it."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest
from django.db import models
from django.db.models.signals import post_init, pre_init

from queues.enums import JobPriority
from queues.models import Batch, Job


def _by_django(**kwargs) -> Job:
    job = Job.__new__(Job)
    models.Model.__init__(job, **kwargs)
    if "scheduled_at" not in kwargs:
        job.scheduled_at = job.created_at
    return job


def _state(job: Job) -> dict:
    values = {k: v for k, v in job.__dict__.items() if k != "_state"}
    return {**values, "_state": (job._state.adding, job._state.db)}


@pytest.mark.parametrize(
    "kwargs",
    [
        {"queue_name": "q"},
        {"queue_name": "q", "payload": {"a": [1]}, "priority": JobPriority.HIGH, "tags": ["t"]},
        {
            "id": uuid.uuid4(),
            "queue_name": "q",
            "created_at": datetime(2030, 1, 1, tzinfo=UTC),
            "scheduled_at": datetime(2030, 1, 2, tzinfo=UTC),
            "batch_id": uuid.uuid4(),
            "max_attempts": 7,
            "meta": {"k": "v"},
        },
    ],
)
def test_a_job_from_keywords_is_the_job_djangos_init_builds(kwargs):
    fast, django = Job(**kwargs), _by_django(**kwargs)
    for name in ("id", "created_at", "scheduled_at"):  # made fresh by each: a new id, now
        if name not in kwargs:
            django.__dict__[name] = fast.__dict__[name]
    assert _state(fast) == _state(django)
    assert list(fast.__dict__) == list(django.__dict__), "fields set in another order"
    assert fast.scheduled_at == fast.created_at or "scheduled_at" in kwargs


def test_defaults_are_new_objects_for_each_job():
    first, second = Job(queue_name="q"), Job(queue_name="q")
    first.payload["x"] = 1
    first.tags.append("t")
    assert (second.payload, second.tags, second.meta, second.depends_on) == ({}, [], {}, [])
    assert first.id != second.id


def test_what_only_djangos_init_knows_still_works():
    batch = Batch(id=uuid.uuid4(), name="b")
    assert Job(queue_name="q", batch=batch).batch_id == batch.id  # a related object
    assert Job(queue_name="q", unique_statuses=["Pending"]).unique_scope == {
        "statuses": ["Pending"]
    }  # a property
    with pytest.raises(TypeError, match="unexpected keyword"):
        Job(queue_name="q", queue="typo")


def test_init_receivers_are_heard():
    heard = []

    def before(sender, args, kwargs, **rest):
        heard.append(("pre", kwargs.get("queue_name")))

    def after(sender, instance, **rest):
        heard.append(("post", instance.queue_name))

    pre_init.connect(before, sender=Job)
    post_init.connect(after, sender=Job)
    try:
        Job(queue_name="heard")
    finally:
        pre_init.disconnect(before, sender=Job)
        post_init.disconnect(after, sender=Job)
    assert heard == [("pre", "heard"), ("post", "heard")]
