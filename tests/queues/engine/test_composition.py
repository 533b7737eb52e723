"""`JobQueue`'s composition, held to its contract (no type checker runs): each part uses of the
queue only its own members and what `QueueCore` declares, the queue provides all of that, no
two parts define the same name, and nothing outside the queue calls its private methods."""

from __future__ import annotations

import ast
import inspect
import textwrap
from pathlib import Path
from typing import get_protocol_members

from queues.api import JobQueue, TestQueue
from queues.engine.core import QueueCore
from queues.engine.outcome_batches import record_outcomes

ROOT = Path(__file__).resolve().parents[3]
PARTS = [part for part in JobQueue.__mro__[1:] if part is not object]


def _own(part: type) -> set[str]:
    """A part's members: its methods, and the state it declares (annotations)."""
    return set(vars(part)) | set(inspect.get_annotations(part))


def _used(source: str, name: str) -> set[str]:
    """The attributes that `source` reads of the variable `name` (`self`, `queue`)."""
    tree = ast.parse(textwrap.dedent(source))
    return {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == name
    }


def test_the_parts_are_the_ones_named():
    names = {part.__name__ for part in PARTS}
    assert names == {
        "Enqueues",
        "Runs",
        "Limits",
        "Operators",
        "Deletes",
        "RecurringRuns",
        "DeclaredSchedules",
        "Archives",
    }


def test_each_part_uses_of_the_queue_only_its_own_members_and_the_core():
    core = get_protocol_members(QueueCore)
    strays = {}
    for part in PARTS:
        stray = _used(inspect.getsource(part), "self") - _own(part) - core
        if stray:
            strays[part.__name__] = sorted(stray)
    assert strays == {}


def test_the_core_declares_nothing_that_no_part_uses():
    used = set().union(*(_used(inspect.getsource(part), "self") for part in PARTS))
    assert get_protocol_members(QueueCore) - used == set()


def test_a_helper_that_takes_the_queue_uses_only_the_core():
    import queues.engine.outcome_batches as module

    used = _used(inspect.getsource(module), "queue")
    assert used <= get_protocol_members(QueueCore), used - get_protocol_members(QueueCore)
    assert inspect.signature(record_outcomes).parameters["queue"].annotation == "QueueCore"


def test_both_queues_provide_the_whole_core():
    for queue in (JobQueue(), TestQueue()):
        missing = [name for name in get_protocol_members(QueueCore) if not hasattr(queue, name)]
        assert missing == [], type(queue).__name__


def test_no_two_parts_define_the_same_name():
    seen: dict[str, str] = {}
    clashes = []
    for part in [JobQueue, *PARTS]:
        for name in vars(part):
            if name.startswith("__"):
                continue
            if name in seen:
                clashes.append(f"{name}: {seen[name]} and {part.__name__}")
            seen[name] = part.__name__
    assert clashes == []


def test_nothing_outside_the_queue_calls_its_private_methods():
    private = {
        name
        for part in [JobQueue, *PARTS]
        for name in vars(part)
        if name.startswith("_") and not name.startswith("__")
    }
    found = []
    for package in ("queues", "workers", "hammerweb"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            tree = ast.parse(path.read_text(), str(path))
            for node in ast.walk(tree):
                if (
                    isinstance(node, ast.Attribute)
                    and node.attr in private
                    and not (isinstance(node.value, ast.Name) and node.value.id in {"self", "cls"})
                ):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} .{node.attr}")
    assert found == []

