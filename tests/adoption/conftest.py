"""Hammerweb as a new user gets it: the wheel built from this checkout, installed into a fresh
venv outside it, and a project made by `django-admin startproject mysite` that follows the
lines of the README's "Add Hammerweb to your project" as they are written. The project gets
an app of its own (`shop`) whose handler writes a row per run with the ORM, on the database
of this test run (a database of its own on the PostgreSQL or MariaDB server).

The wheel and the venv are built once per session (a minute at most: the dependencies come
from the package index, mysqlclient's build from pip's cache); the project once per module.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]
README_SECTION = "## Add Hammerweb to your project"
PASSWORD = "fresh-staff-pw"
#: Not copied into the build: what a checkout holds besides its sources.
NOT_SOURCES = (".git", ".venv", "var", "build", "dist", "*.egg-info", "__pycache__",
               ".pytest_cache", ".ruff_cache", "test-results", "node_modules")

SHOP_MODELS = '''from django.db import models


class Run(models.Model):
    """One run of a job by the handler: a job run twice has two rows."""

    job_id = models.UUIDField()
    queue_name = models.CharField(max_length=100)
    host = models.CharField(max_length=255)
    pid = models.IntegerField()
    cwd = models.CharField(max_length=1000)
'''
SHOP_JOBS = '''import os
import socket

from workers.api import job_handler

from .models import Run

QUEUES = ("shop", "hosts", "mount")


def record(job):
    run = Run.objects.create(
        job_id=job.id, queue_name=job.queue_name, host=socket.gethostname(),
        pid=os.getpid(), cwd=os.getcwd(),
    )
    return {"run": run.pk, "runs_of_this_job": Run.objects.filter(job_id=job.id).count()}


for name in QUEUES:
    job_handler(name)(record)
'''
SHOP_TASKS = '''from django.tasks import task


@task
def add(a, b):
    return a + b
'''


def readme_blocks() -> list[tuple[str, str, str]]:
    """(file, "add at the end" | "the whole file", code) of each Python block of the README's
    section, from the comment that opens it (`# mysite/settings.py: add at the end`)."""
    text = (ROOT / "README.md").read_text()
    section = text.split(README_SECTION, 1)[1].split("\n## ", 1)[0]
    blocks = []
    for code in re.findall(r"```python\n(.*?)```", section, re.DOTALL):
        first = code.partition("\n")[0]
        match = re.fullmatch(r"# (\S+): (add at the end|the whole file)", first)
        if match:
            blocks.append((match[1], match[2], code))
    return blocks


def run(command: list, timeout: float = 300, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [str(part) for part in command], capture_output=True, text=True, timeout=timeout, **kwargs
    )
    assert result.returncode == 0, f"{command} failed:\n{result.stdout}\n{result.stderr}"
    return result


@dataclass
class Installed:
    wheel: Path
    venv: Path

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    def env(self) -> dict[str, str]:
        """The environment of a shell with the venv activated, without this test run's
        settings (DJANGO_SETTINGS_MODULE, DATABASE_URL, HAMMERWEB_*, ...)."""
        dropped = ("DJANGO_", "HAMMERWEB_", "PYTEST_", "VIRTUAL_ENV")
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(dropped) and key not in ("DATABASE_URL", "PYTHONPATH")
        }
        env["PATH"] = f"{self.venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        env["VIRTUAL_ENV"] = str(self.venv)
        env["PYTHONUNBUFFERED"] = "1"
        return env


@pytest.fixture(scope="session")
def installed(tmp_path_factory) -> Installed:
    """The wheel of this checkout, installed (not editable) into a fresh venv in /tmp."""
    base = tmp_path_factory.mktemp("hammerweb-wheel")
    # Built from a copy, so that the build leaves nothing (build/, *.egg-info) in the checkout.
    source = base / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(*NOT_SOURCES))
    run([sys.executable, "-m", "pip", "wheel", source, "--no-deps", "-q", "-w", base / "dist"])
    (wheel,) = (base / "dist").glob("hammerweb-*.whl")
    venv = base / "venv"
    run([sys.executable, "-m", "venv", venv])
    run([venv / "bin" / "python", "-m", "pip", "install", "-q", wheel], timeout=600)
    return Installed(wheel=wheel, venv=venv)


@dataclass
class Project:
    installed: Installed
    path: Path  # holds manage.py
    vendor: str
    database: dict = field(default_factory=dict)

    @property
    def manage(self) -> Path:
        return self.path / "manage.py"

    def command(self, *args) -> list[str]:
        return [str(self.installed.python), str(self.manage), *map(str, args)]

    def run(self, *args, cwd: Path | None = None, timeout: float = 300, check: bool = True):
        result = subprocess.run(
            self.command(*args), cwd=cwd or self.path, env=self.installed.env(),
            capture_output=True, text=True, timeout=timeout,
        )
        if check:
            assert result.returncode == 0, f"{args} failed:\n{result.stdout}\n{result.stderr}"
        return result

    def start(self, *args, log: Path, cwd: Path | None = None, prefix: list[str] = ()):
        with log.open("w") as out:
            return subprocess.Popen(
                [*prefix, *self.command(*args)], cwd=cwd or self.path, env=self.installed.env(),
                stdout=out, stderr=subprocess.STDOUT,
            )

    def shell(self, code: str):
        """Run `code` in `manage.py shell`; it prints one JSON value last."""
        lines = self.run("shell", "-c", code).stdout.strip().splitlines()
        return json.loads(lines[-1])

    def query(self, sql: str, *params) -> list[tuple]:
        """A read of the project's database through the plain driver (%s placeholders)."""
        if self.vendor == "sqlite":
            with sqlite3.connect(self.path / "db.sqlite3", timeout=30) as db:
                return db.execute(sql.replace("%s", "?"), params).fetchall()
        db = _server_connection(self.database, self.database["NAME"])
        try:
            with db.cursor() as cursor:
                cursor.execute(sql, params)
                return list(cursor.fetchall())
        finally:
            db.close()


def _server_connection(settings: dict, name: str | None):
    if "postgresql" in settings["ENGINE"]:
        import psycopg

        return psycopg.connect(
            host=settings["HOST"], port=settings["PORT"] or 5432, user=settings["USER"],
            password=settings["PASSWORD"] or None, dbname=name or "postgres", autocommit=True,
        )
    import MySQLdb

    kwargs = {"db": name} if name else {}
    db = MySQLdb.connect(
        host=settings["HOST"], port=int(settings["PORT"] or 3306), user=settings["USER"],
        password=settings["PASSWORD"] or "", **kwargs,
    )
    db.autocommit(True)
    return db


def _server_database(vendor: str) -> dict:
    """A database of the project's own on this run's server, named after the run (the
    suffix of HAMMERWEB_DB_SUFFIX and this process's id), so that runs side by side on a
    shared server never meet."""
    ours = connection.settings_dict
    name = f"test_fresh{os.environ.get('HAMMERWEB_DB_SUFFIX', '')}_{os.getpid()}"
    settings = {key: ours[key] for key in ("ENGINE", "USER", "PASSWORD", "HOST", "PORT")}
    settings["NAME"] = name
    if vendor == "mysql":
        settings["OPTIONS"] = {"charset": "utf8mb4"}
    server = _server_connection(settings, None)
    try:
        with server.cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS {name}")
            charset = " CHARACTER SET utf8mb4" if vendor == "mysql" else ""
            cursor.execute(f"CREATE DATABASE {name}{charset}")
    finally:
        server.close()
    return settings


def _drop_server_database(settings: dict) -> None:
    server = _server_connection(settings, None)
    try:
        with server.cursor() as cursor:
            if "postgresql" in settings["ENGINE"]:
                cursor.execute(f"DROP DATABASE IF EXISTS {settings['NAME']} WITH (FORCE)")
            else:
                cursor.execute(f"DROP DATABASE IF EXISTS {settings['NAME']}")
    finally:
        server.close()


@pytest.fixture(scope="module")
def project(installed, tmp_path_factory) -> Project:
    """`django-admin startproject mysite`, the README's lines, the `shop` app, migrated, a
    superuser: the database of this run's vendor."""
    vendor = connection.vendor
    base = tmp_path_factory.mktemp("fresh-project")
    run([installed.venv / "bin" / "django-admin", "startproject", "mysite", base / "mysite"],
        env=installed.env())
    project = Project(installed=installed, path=base / "mysite", vendor=vendor)
    blocks = readme_blocks()
    assert len(blocks) >= 4, "the README's section lost its file blocks"
    for name, how, code in blocks:
        target = project.path / name
        if how == "the whole file":
            target.write_text(code)
        else:
            target.write_text(target.read_text() + "\n" + code)

    project.run("startapp", "shop")
    (project.path / "shop" / "models.py").write_text(SHOP_MODELS)
    (project.path / "shop" / "jobs.py").write_text(SHOP_JOBS)
    (project.path / "shop" / "tasks.py").write_text(SHOP_TASKS)
    settings = project.path / "mysite" / "settings.py"
    extra = '\n# The test\'s own app.\nINSTALLED_APPS += ["shop"]\n'
    if vendor != "sqlite":
        project.database = _server_database(vendor)
        extra += f"DATABASES = {{'default': {project.database!r}}}\n"
    settings.write_text(settings.read_text() + extra)
    try:
        project.run("makemigrations", "shop")
        project.run("migrate", "--noinput")
        env = {**installed.env(), "DJANGO_SUPERUSER_PASSWORD": PASSWORD}
        run(project.command("createsuperuser", "--noinput", "--username", "staff",
                            "--email", "staff@example.com"), cwd=project.path, env=env)
        yield project
    finally:
        if project.database:
            _drop_server_database(project.database)


def wait_until(predicate, timeout: float, message: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, message
        time.sleep(0.1)
