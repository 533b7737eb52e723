"""The modules' imports, read from the source (every import, at the top, inside a function or
under TYPE_CHECKING): no import cycle anywhere, and `queues` never imports `workers`."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("hammerweb", "queues", "workers", "demo")


def _modules() -> dict[str, tuple[Path, bool]]:
    """{dotted name: (path, is a package)} of every project module but the migrations."""
    modules = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            modules[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return modules


def _imported(name: str, is_package: bool, node, modules) -> list[str]:
    """The project modules an import statement of module `name` reaches."""
    if isinstance(node, ast.Import):
        targets = [alias.name for alias in node.names]
    else:
        base = name.split(".") if is_package else name.split(".")[:-1]
        if node.level:
            base = base[: len(base) - node.level + 1]
            prefix = ".".join([*base, *([node.module] if node.module else [])])
        else:
            prefix = node.module or ""
        # `from package import module` reaches the module; `from module import name` the module.
        targets = [
            f"{prefix}.{alias.name}" if f"{prefix}.{alias.name}" in modules else prefix
            for alias in node.names
        ]
    found = []
    for target in targets:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        if target and target != name:
            found.append(target)
    return found


@functools.cache
def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    graph = {}
    for name, (path, is_package) in modules.items():
        imports = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import | ast.ImportFrom):
                imports.update(_imported(name, is_package, node, modules))
        graph[name] = imports
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle (its modules, the first repeated at the end), or None."""
    done: set[str] = set()
    for start in sorted(graph):
        path: list[str] = []
        on_path: set[str] = set()
        stack = [(start, iter(sorted(graph[start])))]
        if start in done:
            continue
        path.append(start)
        on_path.add(start)
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                stack.pop()
                path.pop()
                on_path.discard(node)
                done.add(node)
            elif child in on_path:
                return [*path[path.index(child) :], child]
            elif child not in done:
                stack.append((child, iter(sorted(graph[child]))))
                path.append(child)
                on_path.add(child)
    return None


def test_no_module_takes_part_in_an_import_cycle():
    graph = import_graph()
    assert "queues.engine.queue" in graph and "queues.store.sql.store" in graph, "found nothing"
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph) or [])


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_queues_never_imports_workers():
    graph = import_graph()
    leaks = sorted(
        f"{name} -> {target}"
        for name, targets in graph.items()
        if name.startswith("queues")
        for target in targets
        if target.startswith("workers")
    )
    assert leaks == []


def _in(name: str, *rooms: str) -> bool:
    return any(name == room or name.startswith(room + ".") for room in rooms)


def _crossings(graph, importer: tuple[str, ...], imported: tuple[str, ...]) -> list[str]:
    return sorted(
        f"{name} -> {target}"
        for name, targets in graph.items()
        if _in(name, *importer)
        for target in targets
        if _in(target, *imported)
    )


# The rooms' layering, lowest first: the store (and the value types, models and catalogue
# under it) knows nothing of the engine; the engine knows nothing of who drives it (ops, the
# dashboard, the admin, the CLI) nor of the read models behind pages.
DRIVERS = ("queues.ops", "queues.dashboard", "queues.admin", "queues.cli", "queues.management")


def test_the_store_imports_no_engine_and_no_room_above_it():
    above = ("queues.engine", "queues.testing", "queues.reads", *DRIVERS)
    assert _crossings(import_graph(), ("queues.store",), above) == []


def test_the_models_import_no_store_and_no_room_above_it():
    above = ("queues.store", "queues.engine", "queues.testing", "queues.reads", *DRIVERS)
    assert _crossings(import_graph(), ("queues.models",), above) == []


def test_the_engine_imports_no_read_model_no_ops_no_dashboard_no_admin_no_cli():
    above = ("queues.reads", *DRIVERS)
    assert _crossings(import_graph(), ("queues.engine",), above) == []


def test_read_models_import_no_write_path():
    above = ("queues.engine", "queues.testing", *DRIVERS)
    assert _crossings(import_graph(), ("queues.reads",), above) == []


#: What a read model may not call: the ORM's and the store's writes.
WRITES = ("update", "delete", "create", "bulk_create", "bulk_update", "save",
          "get_or_create", "update_or_create", "select_for_update", "raw_execute")


def test_read_models_never_write():
    found = []
    for path in sorted((ROOT / "queues" / "reads").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in WRITES
                # dict.update and set.update of plain values are not writes
                and not (node.func.attr == "update" and isinstance(node.func.value, ast.Name)
                         and node.func.value.id in {"params", "fields", "counts", "seen"})
            ):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} .{node.func.attr}(")
            if isinstance(node, ast.Attribute) and node.attr == "execute":
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} .execute")
    assert found == []


def test_a_worker_run_imports_nothing_of_its_process():
    graph = import_graph()
    assert _crossings(graph, ("workers.runtime",), ("workers.process",)) == []


def test_workers_import_nothing_of_the_dashboard_or_the_admin():
    graph = import_graph()
    drivers = ("queues.dashboard", "queues.admin")
    assert _crossings(graph, ("workers",), drivers) == []


def test_no_module_is_over_400_lines():
    long = []
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" not in path.parts and len(path.read_text().splitlines()) > 400:
                long.append(str(path.relative_to(ROOT)))
    assert sorted(long) == []


def test_the_rule_finders_find_a_crossing():
    graph = {"queues.store.sql.store": {"queues.engine.queue"}, "queues.engine.queue": set()}
    assert _crossings(graph, ("queues.store",), ("queues.engine",)) == [
        "queues.store.sql.store -> queues.engine.queue"
    ]
    assert _crossings(graph, ("queues.store",), ("queues.reads",)) == []
