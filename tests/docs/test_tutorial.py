"""The tutorial (docs/tutorial.md), followed as it is written, in a new project made by
`django-admin startproject` on SQLite: its shell commands run in order, its files are written
as its blocks say (`# shop/jobs.py: the whole file`), each `python manage.py shell` block is
run by `manage.py shell` and prints what the page's next ```text block shows. `runworker`
runs as a child process, as the reader runs it. Only the steps that wait for a person
(`createsuperuser`, `runserver`) and the install itself (this run's interpreter has
Hammerweb) are left out.

The project is on SQLite whatever this run's database, so it runs once, in the SQLite run."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from tests.conftest import ROOT

TUTORIAL = ROOT / "docs" / "tutorial.md"
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.DOTALL | re.MULTILINE)
FILE_BLOCK = re.compile(r"# (\S+): (add at the end|the whole file)")
SHELL_BLOCK = "# python manage.py shell"
#: What the reader does that a test cannot, or need not: wait for a person, install.
NOT_RUN = ("manage.py createsuperuser", "manage.py runserver", "pip install", "python -m venv")


def blocks() -> list[tuple[str, str]]:
    return BLOCK.findall(TUTORIAL.read_text())


def environment() -> dict[str, str]:
    """A shell's environment without this test run's settings."""
    dropped = ("DJANGO_", "HAMMERWEB_", "PYTEST_")
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(dropped) and key != "DATABASE_URL"
    }
    env["PYTHONPATH"] = str(ROOT)  # this checkout's apps, as an install would give them
    return env


def run(args: list[str], cwd: Path) -> str:
    result = subprocess.run(
        args, cwd=cwd, env=environment(), capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, f"{args} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def run_shell_line(line: str, cwd: Path) -> Path:
    """One line of a ```sh block; returns the directory the next line runs in."""
    line = line.split("  #")[0].strip()
    if not line or any(skipped in line for skipped in NOT_RUN):
        return cwd
    if line.startswith("cd "):
        return cwd / line[3:]
    if line.startswith("django-admin "):
        run([sys.executable, "-m", "django", *line.split()[1:]], cwd)
        return cwd
    assert line.startswith("python manage.py "), f"the tutorial runs {line!r}: teach the test"
    run([sys.executable, *line.split()[1:]], cwd)
    return cwd


def test_the_tutorial_reads_as_the_test_follows_it():
    """The blocks the test relies on are there: a file of each kind, two shell sessions each
    followed by what it prints, and the worker's command."""
    found = blocks()
    files = [code for lang, code in found if lang == "python" and FILE_BLOCK.match(code)]
    shells = [code for lang, code in found if lang == "python" and code.startswith(SHELL_BLOCK)]
    assert len(files) >= 4 and len(shells) == 2
    assert any("runworker" in code for lang, code in found if lang == "sh")


@pytest.mark.skipif(connection.vendor != "sqlite", reason="the tutorial's project is on SQLite")
def test_the_tutorial_runs_as_written(tmp_path):
    cwd = tmp_path
    expected_output = None
    for lang, code in blocks():
        if lang == "sh":
            for line in code.splitlines():
                cwd = run_shell_line(line, cwd)
        elif lang == "python" and (match := FILE_BLOCK.match(code)):
            target = cwd / match[1]
            if match[2] == "the whole file":
                target.write_text(code)
            else:
                target.write_text(target.read_text() + "\n" + code)
        elif lang == "python" and code.startswith(SHELL_BLOCK):
            # -v 0: no line about the objects the shell imports by itself
            expected_output = run(
                [sys.executable, "manage.py", "shell", "-v", "0", "-c", code], cwd
            )
        elif lang == "text":
            assert expected_output is not None, "a ```text block follows no shell session"
            assert expected_output.strip() == code.strip()
            expected_output = None
    assert (cwd / "db.sqlite3").exists()
