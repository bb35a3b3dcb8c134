"""The source's layout (ADR 0075): no import cycle among its modules, and the stream and the
snapshots import the source only through the package ``mssql_cdc.source``."""

from __future__ import annotations

import ast
from pathlib import Path

import mssql_cdc

PACKAGE = Path(mssql_cdc.__file__).parent


def _imports(path: Path) -> set[str]:
    """Every ``mssql_cdc...`` module ``path`` imports (function-level imports included,
    ``if TYPE_CHECKING:`` blocks left out)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(child) for stmt in node.body for child in ast.walk(stmt))
    out = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
    return {name for name in out if name.startswith("mssql_cdc")}


def test_the_source_modules_import_each_other_without_a_cycle():
    modules = {
        f"mssql_cdc.source.{p.stem}": p
        for p in (PACKAGE / "source").glob("*.py")
        if p.stem != "__init__"
    }
    graph = {name: _imports(path) & modules.keys() for name, path in modules.items()}
    done: set[str] = set()

    def visit(name: str, trail: list[str]) -> None:
        assert name not in trail, "import cycle: " + " -> ".join([*trail, name])
        if name in done:
            return
        for target in sorted(graph[name]):
            visit(target, [*trail, name])
        done.add(name)

    for name in sorted(graph):
        visit(name, [])
    assert "mssql_cdc.source.client" in graph["mssql_cdc.source.catalog"]
    assert not graph["mssql_cdc.source.sql"]


def test_the_stream_and_the_snapshots_import_the_source_only_through_its_package():
    reached = {
        (f"{package}/{path.name}", name)
        for package in ("pipeline", "snapshots")
        for path in sorted((PACKAGE / package).glob("*.py"))
        for name in _imports(path)
        if name.startswith("mssql_cdc.source")
    }
    assert {path.split("/")[0] for path, _ in reached} == {"pipeline", "snapshots"}
    assert {name for _, name in reached} == {"mssql_cdc.source"}, sorted(reached)
