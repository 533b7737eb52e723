"""A job's story on its page: the run under way (lease, heartbeat) or the completed one
above the failed attempts, and its workflow drawn as a graph (SVG, escaped, bounded)."""

from __future__ import annotations

import re
import uuid

import pytest
from django.urls import reverse

from queues.api import Job, JobGroup, JobOutcome
from queues.dashboard.graph import layers
from tests.queues.dashboard.views.conftest import enqueue

pytestmark = pytest.mark.django_db


def test_a_running_job_shows_its_run_with_lease_and_heartbeat(engine, qname, viewer_client):
    enqueue(engine, qname, max_attempts=3)
    engine.finish_job_run(engine.dequeue_one(qname), JobOutcome.retry(engine.now(), "flaky"))
    job = engine.dequeue_one(qname)
    html = viewer_client.get(reverse("dashboard:job", args=[job.id])).content.decode()
    attempts = html[html.index('id="job-attempts"') :]
    running = attempts.index("<strong>Running</strong>")
    assert running < attempts.index("flaky")  # newest first
    assert "#2" in attempts[:running] and "Lease until" in attempts and "last heartbeat" in attempts


def test_a_completed_job_shows_its_last_run(engine, qname, viewer_client):
    enqueue(engine, qname)
    job = engine.dequeue_one(qname)
    engine.finish_job_run(job, JobOutcome.completed())
    html = viewer_client.get(reverse("dashboard:job", args=[job.id])).content.decode()
    assert "<strong>Completed</strong>" in html and "ran for" in html


def diamond(queue: str) -> tuple[JobGroup, list[Job]]:
    a, b, c, d = (Job(queue_name=queue) for _ in range(4))
    group = JobGroup("diamond")
    group.add_job(a)
    group.add_job(b.depends_on_job(a))
    group.add_job(c.depends_on_job(a))
    group.add_job(d.depends_on_job(b).depends_on_job(c))
    return group, [a, b, c, d]


def test_the_workflow_page_draws_its_graph(engine, viewer_client):
    name = "<b>q</b>"
    group, (a, b, c, d) = diamond(name)
    workflow = engine.enqueue_workflow(group)
    url = reverse("dashboard:workflow", args=[workflow])
    html = viewer_client.get(url, {"job": str(b.id)}).content.decode()
    svg = html[html.index('<svg class="workflow-graph"') : html.index("</svg>")]
    assert 'aria-label="4 jobs, 4 dependencies"' in svg
    assert svg.count('class="edge"') == 4
    for job in (a, b, c, d):
        assert f'href="{reverse("dashboard:job", args=[job.id])}"' in svg
    assert re.search(r'class="node s-\w+ current"><title>' + str(b.id), svg)
    assert name not in html and "&lt;b&gt;q&lt;/b&gt;" in svg
    # Junk in ?job= is no current job, not an error.
    assert viewer_client.get(url, {"job": "junk"}).status_code == 200


def test_the_job_page_links_its_workflow_graph(engine, qname, viewer_client):
    group, (a, *_) = diamond(qname)
    workflow = engine.enqueue_workflow(group)
    html = viewer_client.get(reverse("dashboard:job", args=[a.id])).content.decode()
    assert f"{reverse('dashboard:workflow', args=[workflow])}?job={a.id}#graph" in html


def test_layers_put_each_job_after_its_furthest_parent():
    a, b, c, d, e = (uuid.uuid4() for _ in range(5))
    edges = [(a, b), (b, c), (a, c), (c, d)]
    assert layers([a, b, c, d, e], edges) == {a: 0, b: 1, c: 2, d: 3, e: 0}
    # A cycle (no workflow has one) ends, with bounded columns.
    assert max(layers([a, b], [(a, b), (b, a)]).values()) <= 2
