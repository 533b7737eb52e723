"""The Python examples of the how-to guides (docs/howto/*.md), run as a reader would paste
them, one page at a time in one namespace, on this run's database (sybil parses the pages).
A block that shows a file of the reader's project (its first line `# mysite/settings.py: add
at the end`, `# shop/jobs.py: the whole file`) is compiled, not run: it belongs to another
project's settings or app."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from sybil import Sybil
from sybil.parsers.markdown import CodeBlockParser, SkipParser

from tests.conftest import ROOT

GUIDES = sorted((ROOT / "docs" / "howto").glob("*.md"))
FILE_BLOCK = re.compile(r"# \S+: (add at the end|the whole file)")


def evaluate(example) -> None:
    source = example.parsed
    code = compile(source, f"{example.path}:{example.line}", "exec")
    if FILE_BLOCK.fullmatch(source.lstrip().partition("\n")[0]):
        return  # compiled: its syntax holds
    exec(code, example.namespace)


SYBIL = Sybil(parsers=[SkipParser(), CodeBlockParser(language="python", evaluator=evaluate)])


def examples(page: Path) -> list:
    return list(SYBIL.parse(page).examples())


def test_every_guide_is_read():
    """The pages are found, and the parser finds their blocks (a change of sybil's parsing,
    or of the pages' fences, would otherwise pass with nothing run)."""
    assert len(GUIDES) >= 10
    assert sum(len(examples(page)) for page in GUIDES) >= 15


@pytest.mark.parametrize("page", GUIDES, ids=lambda page: page.stem)
def test_guide_examples_run(page, transactional_db):
    for example in examples(page):
        example.evaluate()


def served_metrics() -> set[str]:
    """The series names Hammerweb serves, as the reference page reads them."""
    sys.path.insert(0, str(ROOT / "docs" / "_ext"))
    try:
        import hammerweb_reference as reference
    finally:
        sys.path.remove(str(ROOT / "docs" / "_ext"))
    names = set()
    for families in (reference._worker_families(), reference._queue_families()):
        for name, kind, _labels, _doc in families:
            names.update(name + suffix for suffix in reference.EXPOSED[kind])
    return names


def test_the_grafana_dashboard_queries_served_metrics():
    """The monitoring guide's Grafana dashboard is valid JSON whose every query names
    metrics Hammerweb serves (a renamed metric would leave a panel empty)."""
    dashboard = json.loads((ROOT / "docs" / "_static" / "grafana" / "hammerweb.json").read_text())
    exprs = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    used = {name for expr in exprs for name in re.findall(r"\bhammerweb_\w+", expr)}
    assert len(exprs) >= 8 and used
    assert used <= served_metrics(), used - served_metrics()
