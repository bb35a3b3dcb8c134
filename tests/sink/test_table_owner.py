"""``mssql_cdc.sink`` is the one owner of the Delta tables the stream writes (ADR 0072), and
``mssql_cdc.silver`` of the silver tables (its MERGEs, ADR 0140): outside them, no module
writes, creates, merges or reads a Delta table itself, names a ``txnAppId``, or imports the
sink's inner modules instead of the package's surface. Checked on the source's syntax tree (no
Spark), so a violation fails the quick tests."""

from __future__ import annotations

import ast
from pathlib import Path

import mssql_cdc
from mssql_cdc import sink

PACKAGE = Path(mssql_cdc.__file__).parent
#: Spark and Delta calls that touch a table
TABLE_CALLS = {"saveAsTable", "insertInto", "createDataFrame", "delta_table", "append_untracked"}
#: text that makes a table, names a commit's txnAppId, or says a Delta format
TABLE_TEXT = ("CREATE TABLE", "MERGE INTO", "#facts", "#events", "txnAppId")


def _orchestration() -> list[Path]:
    """The product's modules outside the tables' owners (the emulator is a test double)."""
    skip = (PACKAGE / "sink", PACKAGE / "silver", PACKAGE / "emulator")
    return sorted(p for p in PACKAGE.rglob("*.py") if not any(p.is_relative_to(s) for s in skip))


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def _import_violations(node: ast.AST, line: str) -> list[str]:
    if isinstance(node, ast.ImportFrom) and node.module:
        names = [node.module]
    elif isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        return []
    found = []
    for name in names:
        if name.startswith("mssql_cdc.sink."):
            found.append(f"{line}: imports {name}; import from mssql_cdc.sink")
        if name == "delta" or name.startswith("delta."):
            found.append(f"{line}: imports Delta's Python API ({name})")
    return found


def _call_violations(node: ast.AST, line: str) -> list[str]:
    if isinstance(node, ast.Attribute) and node.attr in TABLE_CALLS:
        return [f"{line}: calls .{node.attr}"]
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return []
    if node.func.attr == "read" and [getattr(a, "id", None) for a in node.args] == ["spark"]:
        return [f"{line}: reads a table (TableRef.read)"]
    if node.func.attr == "append" and any(k.arg == "merge_schema" for k in node.keywords):
        return [f"{line}: appends to a table (TableRef.append)"]
    if node.func.attr == "format" and any(
        isinstance(a, ast.Constant) and a.value == "delta" for a in node.args
    ):
        return [f'{line}: reads or writes format("delta")']
    return []


def _violations(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    docs = _docstrings(tree)
    where = path.relative_to(PACKAGE.parent)
    found = []
    for node in ast.walk(tree):
        line = f"{where}:{getattr(node, 'lineno', '?')}"
        found += _import_violations(node, line) + _call_violations(node, line)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            found += [f"{line}: the text {text!r}" for text in TABLE_TEXT if text in node.value]
    return found


def test_outside_the_sink_no_module_touches_a_delta_table_itself():
    modules = _orchestration()
    assert any(p.name == "bootstrap.py" for p in modules)  # the scan sees pipeline/
    assert [v for p in modules for v in _violations(p)] == []


def test_the_scan_finds_what_it_forbids():
    bad = PACKAGE / "sink" / "bronze.py"  # the owner does every forbidden thing
    assert any("calls .delta_table" in v for v in _violations(bad))
    local_rows = PACKAGE / "sink" / "local_rows.py"
    assert any("calls .createDataFrame" in v for v in _violations(local_rows))
    ids = PACKAGE / "sink" / "ledger" / "ids.py"
    assert any("'#events'" in v for v in _violations(ids))


def test_every_txn_app_id_is_named_in_one_module():
    assert (sink.ids.bronze_id("a"), sink.ids.facts_id("a"), sink.ids.events_id("a")) == (
        "a",
        "a#facts",
        "a#events",
    )
    named = [
        str(p.relative_to(PACKAGE / "sink"))
        for p in (PACKAGE / "sink").rglob("*.py")
        if any("'#facts'" in v or "'#events'" in v for v in _violations(p))
    ]
    assert named == ["ledger/ids.py"]


def test_every_table_kind_is_declared_once_with_its_schema_version():
    kinds = {k.kind: k for k in (sink.BRONZE, sink.FACTS, sink.CONTROL)}
    assert {k: v.properties() for k, v in kinds.items()} == {
        "bronze": {"mssql_cdc.schema_version": "2"},
        "facts": {"mssql_cdc.schema_version": "12"},
        "control": {"mssql_cdc.schema_version": "4"},
    }
    assert sink.BRONZE.names == ("_batch_id", "_snapshot", "_chunk")
    assert sink.FACTS.names[:3] == ("app_id", "batch_id", "rows")
    assert sink.FACTS.ddl.startswith("`app_id` STRING, `batch_id` BIGINT")
