"""Issue #12: the wheel in a fresh venv, a `startproject` project that follows the README's
lines, on this run's database: `check`, a handler that uses the ORM and returns a value, a
`@task`, `runworker --burst` and `--processes 2` from another directory, two supervisors on
separate "hosts" sharing one queue, and the dashboard under a mount prefix (WSGI and ASGI)."""

from __future__ import annotations

import signal
import subprocess
import uuid
import zipfile
from collections import Counter

from tests.adoption.conftest import ROOT, wait_until
from tests.adoption.web import URL_ATTRIBUTES, Session, first_message, serving

MOUNT = "/ops/jobs/"
ENQUEUE = """
import json
from queues.api import Job, JobQueue
jobs = [Job(queue_name={queue!r}, payload={{"n": n}}) for n in range({count})]
ids = JobQueue().enqueue_many(jobs)
print(json.dumps([str(i) for i in ids]))
"""
RESULTS = """
import json
from queues.api import JobQueue
jobs = [JobQueue().get_job(i) for i in {ids!r}]
print(json.dumps([[j.status, j.result] for j in jobs]))
"""


def enqueue(project, queue: str, count: int) -> list[str]:
    return project.shell(ENQUEUE.format(queue=queue, count=count))


def runs_of(project, ids: list[str]) -> Counter:
    """Rows of the handler's side table per job id (a job run twice has two)."""
    wanted = {uuid.UUID(i) for i in ids}
    rows = project.query("SELECT job_id FROM shop_run")
    return Counter(uuid.UUID(str(job_id)) for (job_id,) in rows if uuid.UUID(str(job_id)) in wanted)


def cwds_of(project, ids: list[str]) -> set[str]:
    """The working directories the handler ran these jobs in."""
    wanted = {uuid.UUID(i) for i in ids}
    rows = project.query("SELECT job_id, cwd FROM shop_run")
    return {cwd for job_id, cwd in rows if uuid.UUID(str(job_id)) in wanted}


def test_the_wheel_carries_what_the_apps_need(installed):
    names = set(zipfile.ZipFile(installed.wheel).namelist())
    files = {
        **{f"queues/templates/{p.relative_to(ROOT / 'templates')}": p
           for p in (ROOT / "templates").rglob("*.html")},
        **{f"queues/static/{p.relative_to(ROOT / 'static')}": p
           for p in (ROOT / "static").rglob("*") if p.is_file()},
        **{str(p.relative_to(ROOT)): p for app in ("queues", "workers")
           for p in (ROOT / app).rglob("*") if p.suffix in (".py", ".sql")},
    }
    assert "queues/migrations/0001_initial.py" in files
    assert "queues/store/catalogue/sqlite.sql" in files
    assert set(files) - names == set(), "files the apps need are missing from the wheel"
    # The project, the demo and the tests are this repository's, not the package's.
    assert {name.split("/")[0] for name in names} == {
        "queues", "workers", f"hammerweb-{installed.wheel.name.split('-')[1]}.dist-info"
    }


def test_check_is_clean(project):
    result = project.run("check", "--fail-level", "WARNING")
    assert "no issues" in result.stdout, result.stdout + result.stderr


def test_burst_runs_a_handler_and_a_task_from_another_directory(project, tmp_path):
    ids = enqueue(project, "shop", 3)
    task_id = project.shell(
        "import json; from shop.tasks import add; print(json.dumps(add.enqueue(2, 3).id))"
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    result = project.run("runworker", "shop", "default", "--burst", cwd=elsewhere)

    assert "processed 4 jobs (4 completed, 0 failed)" in result.stdout, result.stderr
    for status, value in project.shell(RESULTS.format(ids=ids)):
        assert status == "Completed"
        assert value["runs_of_this_job"] == 1
    assert runs_of(project, ids) == Counter({uuid.UUID(i): 1 for i in ids})
    assert cwds_of(project, ids) == {str(elsewhere)}
    task = project.shell(
        "import json; from shop.tasks import add; "
        f"r = add.get_result({task_id!r}); print(json.dumps([r.status, r.return_value]))"
    )
    assert task == ["SUCCESSFUL", 5]


def test_processes_2_from_another_directory(project, tmp_path):
    ids = enqueue(project, "shop", 20)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    result = project.run(
        "runworker", "shop", "--processes", "2", "--burst", "--batch-size", "3",
        "--poll-interval", "0.05", cwd=elsewhere,
    )

    assert result.stderr.count("started worker process") == 2, result.stderr
    runs = runs_of(project, ids)
    assert runs == Counter({uuid.UUID(i): 1 for i in ids})
    assert cwds_of(project, ids) == {str(elsewhere)}


def _hosts_available() -> bool:
    try:
        return subprocess.run(["unshare", "--uts", "true"], capture_output=True).returncode == 0
    except FileNotFoundError:
        return False


def test_two_supervisors_on_two_hosts_share_one_queue(project, tmp_path):
    """Each supervisor (2 children) in a UTS namespace of its own, so with a host name of
    its own, where the machine allows it; 150 jobs; every job runs exactly once."""
    hosts = ["fresh-host-a", "fresh-host-b"]
    separate = _hosts_available()
    supervisors = []
    for host in hosts:
        prefix = ["unshare", "--uts", "sh", "-c", f'hostname {host} && exec "$0" "$@"']
        supervisors.append(project.start(
            "runworker", "hosts", "--processes", "2", "--batch-size", "5", "--concurrency", "2",
            "--poll-interval", "0.05", log=tmp_path / f"{host}.log", cwd=tmp_path,
            prefix=prefix if separate else [],
        ))
    try:
        wait_until(
            lambda: project.query("SELECT count(*) FROM queues_workerprocess")[0][0] == 4,
            90, "the four worker processes did not start",
        )
        ids = enqueue(project, "hosts", 150)
        wait_until(
            lambda: project.query(
                "SELECT count(*) FROM queues_job WHERE queue_name = %s AND status = %s",
                "hosts", "Completed",
            )[0][0] == 150,
            120, "the jobs were not all completed",
        )
        for supervisor in supervisors:
            supervisor.send_signal(signal.SIGTERM)
        for supervisor, host in zip(supervisors, hosts, strict=True):
            assert supervisor.wait(60) == 0, (tmp_path / f"{host}.log").read_text()
    finally:
        for supervisor in supervisors:
            if supervisor.poll() is None:
                supervisor.kill()
                supervisor.wait()
    assert runs_of(project, ids) == Counter({uuid.UUID(i): 1 for i in ids})
    by_host = Counter(
        host for (host,) in project.query("SELECT host FROM shop_run WHERE queue_name = %s",
                                          "hosts")
    )
    if separate:
        assert set(by_host) == set(hosts), by_host  # both hosts took part
    assert sum(by_host.values()) == 150


def _urls(html: str) -> set[str]:
    return {url for _, url in URL_ATTRIBUTES.findall(html)}


def _assert_within_mount(html: str) -> None:
    outside = {
        url for url in _urls(html)
        if url.startswith("/") and not url.startswith((MOUNT, "/static/", "/admin/"))
    }
    assert not outside, f"URLs outside the mount: {outside}"


def _pages(session, job_id: str) -> dict[str, str]:
    """Every page under the mount, logged in; each of their URLs within the mount."""
    pages = {MOUNT: session.log_in(MOUNT)}
    for path in [f"{MOUNT}queues/mount/", f"{MOUNT}jobs/{job_id}/", f"{MOUNT}reaper/",
                 f"{MOUNT}batches/", f"{MOUNT}recurring/", f"{MOUNT}workers/"]:
        _, status, _, pages[path] = session.get(path)
        assert status == 200, path
    for html in pages.values():
        _assert_within_mount(html)
    assert {f"{MOUNT}reaper/", f"{MOUNT}workers/", f"{MOUNT}queues/mount/"} <= _urls(pages[MOUNT])
    return pages


def test_the_dashboard_under_a_mount_over_asgi(project, tmp_path):
    ids = enqueue(project, "mount", 1)
    with serving(project, tmp_path / "asgi.log") as base:
        session = Session(base)
        pages = _pages(session, ids[0])
        overview = pages[MOUNT]
        nav = _urls(overview)

        # The CSS and scripts, found by the staticfiles finders in the installed apps.
        css = next(url for url in nav if url.endswith(".css"))
        assert css == "/static/hammerweb/dashboard.css"
        for url in [css, "/static/hammerweb/live.js",
                    next(url for url in nav if "django_htmx" in url)]:
            _, status, headers, body = session.get(url)
            assert status == 200 and body, url
        assert session.get(css)[2]["Content-Type"].startswith("text/css")

        # A form under the mount: pause the queue, as htmx posts it.
        _, status, body = session.post(
            f"{MOUNT}actions/pause/", {"queue": "mount"},
            {"HX-Request": "true", "X-CSRFToken": session.cookie("csrftoken")},
        )
        assert status == 200 and "Paused mount" in body
        assert project.query(
            "SELECT count(*) FROM queues_queuepause WHERE queue_name = %s", "mount"
        ) == [(1,)]

        # The WebSocket at the mount pushes the overview's live region.
        assert f'ws-connect="{MOUNT}ws/dashboard/"' in overview
        assert f'ws-connect="{MOUNT}ws/dashboard/workers/"' in pages[f"{MOUNT}workers/"]
        message = first_message(base, f"{MOUNT}ws/dashboard/", session.header())
        assert 'id="overview-live"' in message and "mount" in message


def test_the_dashboard_under_a_mount_over_wsgi_polls(project, tmp_path):
    # daphne's `runserver --noasgi` is Django's WSGI server, which serves no static files
    # (a WSGI deployment serves collectstatic's folder): the ASGI test fetches them.
    ids = enqueue(project, "mount", 1)
    with serving(project, tmp_path / "wsgi.log", "--noasgi") as base:
        session = Session(base)
        pages = _pages(session, ids[0])
        # No socket to open under WSGI: the live regions poll, at their own URLs.
        assert not any("ws-connect" in html for html in pages.values())
        assert f'hx-get="{MOUNT}"' in pages[MOUNT]
        assert f'hx-get="{MOUNT}workers/"' in pages[f"{MOUNT}workers/"]
