"""A job's workflow graph in a real browser, reached from the job's page: a box per job with
its status, an arrow per dependency, the job we came from drawn bold, each box a link to its
job's page, a queue name holding a <script> shown as text (never run), and the graph still
drawn in dark mode and on a phone."""

from __future__ import annotations

import pytest

from queues.api import Job, JobGroup, JobOutcome, JobQueue, JobStatus
from queues.models import Job as JobRow
from tests.browser.conftest import screenshot
from tests.conftest import unique_queue

sync_api = pytest.importorskip("playwright.sync_api")
expect = sync_api.expect

pytestmark = pytest.mark.django_db(transaction=True)
SCRIPT = "<script>window.pwned=1</script>"


def diamond() -> tuple[str, dict[str, Job]]:
    """extract -> (transform, enrich) -> load: extract completed, transform failed, enrich
    running, load waiting for both. Returns the queue with the script in its name."""
    plain, hostile = unique_queue("browser_graph"), f"{SCRIPT}{unique_queue('q')}"
    jobs = {
        "extract": Job(queue_name=plain),
        "transform": Job(queue_name=plain, max_attempts=1),
        "enrich": Job(queue_name=hostile),
        "load": Job(queue_name=plain),
    }
    group = JobGroup(f"nightly {SCRIPT}")
    group.add_job(jobs["extract"])
    group.add_job(jobs["transform"].depends_on_job(jobs["extract"]))
    group.add_job(jobs["enrich"].depends_on_job(jobs["extract"]))
    group.add_job(jobs["load"].depends_on_job(jobs["transform"]).depends_on_job(jobs["enrich"]))
    engine = JobQueue()
    engine.enqueue_workflow(group)
    engine.finish_job_run(engine.dequeue_one(plain), JobOutcome.completed())  # extract
    assert engine.dequeue_one(hostile).id == jobs["enrich"].id  # left Running
    engine.finish_job_run(engine.dequeue_one(plain), JobOutcome.failed("upstream 502"))
    return hostile, jobs


def statuses(jobs: dict[str, Job]) -> dict[str, str]:
    return {
        key: JobRow.objects.values_list("status", flat=True).get(id=job.id)
        for key, job in jobs.items()
    }


def open_graph(page, base: str, job: Job):
    """The job's page, then its graph by the link the page shows."""
    page.goto(f"{base}/jobs/{job.id}/")
    page.get_by_role("link", name="its graph").click()
    page.wait_for_url(f"**/workflows/**?job={job.id}#graph")
    graph = page.locator("svg.workflow-graph")
    expect(graph).to_be_visible()
    return graph


def test_the_graph_shows_each_job_its_status_the_dependencies_and_the_current_job(
    page, live_server
):
    hostile, jobs = diamond()
    now = statuses(jobs)
    assert now["extract"] == JobStatus.COMPLETED and now["enrich"] == JobStatus.RUNNING
    assert now["transform"] in (JobStatus.FAILED, JobStatus.DEAD)
    graph = open_graph(page, live_server.url, jobs["enrich"])
    assert graph.get_attribute("aria-label") == "4 jobs, 4 dependencies"
    nodes = graph.locator("a.node")
    expect(nodes).to_have_count(4)
    for key, job in jobs.items():
        node = graph.locator(f'a.node[href="/jobs/{job.id}/"]')
        expect(node).to_have_class(f"node s-{now[key].lower()}" + (" current" * (key == "enrich")))
        expect(node.locator("text").first).to_have_text(f"{str(job.id)[:8]} · {now[key]}")
        assert node.locator("rect").bounding_box()["width"] > 50, f"{key}'s box is drawn"
    edges = graph.locator("path.edge")
    expect(edges).to_have_count(4)
    assert all(edges.nth(i).bounding_box()["width"] > 10 for i in range(4))
    # The current job is the bold one, the only one.
    current = graph.locator("a.node.current")
    expect(current).to_have_count(1)
    width = current.locator("rect").evaluate("r => getComputedStyle(r).strokeWidth")
    others = graph.locator("a.node:not(.current)")  # the boxes' order follows the ids
    other = others.first.locator("rect").evaluate("r => getComputedStyle(r).strokeWidth")
    assert (width, other) == ("3px", "1.5px")
    # The queue name holding a script is text, in the box's title and its second line.
    assert page.evaluate("window.pwned") is None
    assert SCRIPT in current.locator("title").text_content()
    assert current.locator("text").nth(1).text_content().startswith("<script>")
    assert page.locator("script", has_text="pwned").count() == 0
    screenshot(page, "workflow-graph")
    # A box leads to its job's page.
    graph.locator(f'a.node[href="/jobs/{jobs["extract"].id}/"]').click()
    page.wait_for_url(f"**/jobs/{jobs['extract'].id}/")
    expect(page.locator("body")).to_contain_text(str(jobs["extract"].id))
    assert page.evaluate("window.pwned") is None, "nor on the job's page (its workflow name)"


def test_the_graph_is_drawn_in_dark_mode_and_on_a_phone(page, live_server):
    _, jobs = diamond()
    page.emulate_media(color_scheme="dark")
    graph = open_graph(page, live_server.url, jobs["load"])
    ink = graph.locator("a.node text").first.evaluate("t => getComputedStyle(t).fill")
    panel = graph.locator("a.node rect").first.evaluate("r => getComputedStyle(r).fill")
    background = page.evaluate("getComputedStyle(document.querySelector('.card')).backgroundColor")
    assert background == "rgb(26, 32, 41)"
    assert ink != panel, "the boxes' text stands out of their fill"
    expect(graph.locator("a.node")).to_have_count(4)
    screenshot(page, "workflow-graph-dark")
    page.emulate_media(color_scheme="light")
    assert graph.locator("a.node text").first.evaluate("t => getComputedStyle(t).fill") != ink

    page.set_viewport_size({"width": 390, "height": 844})
    page.reload()
    graph = page.locator("svg.workflow-graph")
    expect(graph).to_be_visible()
    # The workflow's name, one long word here, wraps rather than widen the page.
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    box = graph.bounding_box()
    assert 200 < box["width"] <= 390 and box["height"] > 40
    for i in range(4):  # every box on screen, none cut off
        rect = graph.locator("a.node rect").nth(i).bounding_box()
        assert rect["x"] >= 0 and rect["x"] + rect["width"] <= 390
    screenshot(page, "workflow-graph-phone")
