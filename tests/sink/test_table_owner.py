"""Who owns what, checked on the source's syntax tree (no Spark), so a violation fails the
quick tests:

* ``mssql_cdc.sink`` is the one owner of the Delta tables the stream writes (ADR 0072), and
  ``mssql_cdc.silver`` of the silver tables (its MERGEs, ADR 0140): outside them, no module
  writes, creates, merges or reads a Delta table itself, or imports the sink's inner modules
  instead of the package's surface;
* only the ledger (``mssql_cdc.sink.ledger``) names a ``txnAppId`` or a ``txnVersion`` or asks
  what already landed: nowhere else is a transaction id spelled (nor a generation's sink id
  ``<app_id>.g<n>``), a ``Txn`` built, a transaction passed as an argument (but by the writers
  that carry one to Delta), an inner module of the ledger imported, or one of the reads of what
  landed (transaction versions, the facts rows that record commits, bronze's snapshot evidence,
  Spark's checkpoint, the generation file) defined or called. Inside the ledger only ``ids``
  spells an id or builds a ``Txn``.
"""

from __future__ import annotations

import ast
import itertools
import textwrap
from pathlib import Path

import pytest

import mssql_cdc
from mssql_cdc import sink

PACKAGE = Path(mssql_cdc.__file__).parent
LEDGER = PACKAGE / "sink" / "ledger"
#: Spark and Delta calls that touch a table
TABLE_CALLS = {"saveAsTable", "insertInto", "createDataFrame", "delta_table", "append_untracked"}
#: text that makes a table or says a Delta format
TABLE_TEXT = ("CREATE TABLE", "MERGE INTO")
#: text that spells a transaction id
TXN_TEXT = (
    "#facts",
    "#events",
    "#switch",
    "#snapshots",
    "#snapplan",
    "#snapchunks",
    "mssql_cdc#snapshot",
)
#: parameter and keyword names that pass a transaction (or its parts)
TXN_NAMES = {"txn", "txn_app_id", "txn_version", "txnAppId", "txnVersion"}
#: the reads of what already landed: defined in the ledger only (``recorded_txn_version`` is
#: the Delta log adapter's, ``sink/txn_ids.py``) and never called by name outside it
LANDED_READS = {
    "txn_version",
    "snapshot_txn_version",
    "recorded_txn_version",
    "last_batch",
    "recorded_targets",
    "bootstrap_lsn",
    "find_snapshot",
    "newest_whole_snapshot",
    "snapshot_rows",
    "chunk_rows",
    "chunked_snapshot",
    "open_chunked_snapshots",
    "newest_snapshot_event",
    "newest_snapshot_opened",
    "newest_headroom",
    "batch_end",
    "last_committed_offset",
    "read_state",
    "write_state",
}
#: the sink modules that carry a ledger's transaction to Delta (a ``txn`` parameter), and the
#: one that names Delta's option names for it
CARRIERS = ("sink/tables.py", "sink/bronze.py", "sink/facts_table.py")
#: Delta's writer options for a transaction, named only where ``Txn`` is carried to Delta
DELTA_OPTIONS = ("txnAppId", "txnVersion")


def _product() -> list[Path]:
    """Every module of the product (the emulator is a test double)."""
    return sorted(p for p in PACKAGE.rglob("*.py") if not p.is_relative_to(PACKAGE / "emulator"))


def _orchestration() -> list[Path]:
    """The product's modules outside the tables' owners."""
    skip = (PACKAGE / "sink", PACKAGE / "silver")
    return [p for p in _product() if not any(p.is_relative_to(s) for s in skip)]


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def _imported(node: ast.AST) -> list[tuple[str, list[str]]]:
    """``(module, names)`` of an import statement."""
    if isinstance(node, ast.ImportFrom) and node.module:
        return [(node.module, [a.name for a in node.names])]
    if isinstance(node, ast.Import):
        return [(a.name, []) for a in node.names]
    return []


def _table_violations(tree: ast.AST, where: str) -> list[str]:
    """The table owners' rule: no table touched outside ``sink/`` and ``silver/``."""
    docs = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        line = f"{where}:{getattr(node, 'lineno', '?')}"
        for module, _ in _imported(node):
            if module.startswith("mssql_cdc.sink."):
                found.append(f"{line}: imports {module}; import from mssql_cdc.sink")
            if module == "delta" or module.startswith("delta."):
                found.append(f"{line}: imports Delta's Python API ({module})")
        if isinstance(node, ast.Attribute) and node.attr in TABLE_CALLS:
            found.append(f"{line}: calls .{node.attr}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            attr = node.func.attr
            if attr == "read" and [getattr(a, "id", None) for a in node.args] == ["spark"]:
                found.append(f"{line}: reads a table (TableRef.read)")
            if attr == "append" and any(k.arg == "merge_schema" for k in node.keywords):
                found.append(f"{line}: appends to a table (TableRef.append)")
            if attr == "format" and any(
                isinstance(a, ast.Constant) and a.value == "delta" for a in node.args
            ):
                found.append(f'{line}: reads or writes format("delta")')
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            found += [f"{line}: the text {text!r}" for text in TABLE_TEXT if text in node.value]
    return found


def _spells_a_generation(node: ast.AST) -> bool:
    """``".g"`` alone, or an f-string piece ending in ``.g`` before a value (``.g{n}``)."""
    if isinstance(node, ast.Constant) and node.value == ".g":
        return True
    if isinstance(node, ast.JoinedStr):
        parts = node.values
        return any(
            isinstance(a, ast.Constant)
            and isinstance(a.value, str)
            and a.value.endswith(".g")
            and isinstance(b, ast.FormattedValue)
            for a, b in itertools.pairwise(parts)
        )
    return False


def _arguments(node: ast.AST) -> list[str]:
    """The parameter names of a function, or the keyword names of a call."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
        a = node.args
        return [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    if isinstance(node, ast.Call):
        return [k.arg for k in node.keywords if k.arg is not None]
    return []


def _ledger_violations(tree: ast.AST, where: str) -> list[str]:  # noqa: PLR0912 (one rule each)
    """The ledger's rule, for a module outside ``sink/ledger/`` (``where``: its path under the
    package, ``sink/bronze.py``)."""
    docs = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        line = f"{where}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            spelled = [t for t in TXN_TEXT if t in node.value]
            found += [f"{line}: spells a transaction id ({t!r})" for t in spelled]
            if node.value in DELTA_OPTIONS and where != "sink/tables.py":
                found.append(f"{line}: names Delta's option {node.value!r}")
        if _spells_a_generation(node):
            found.append(f"{line}: spells a generation's sink id (.g<n>)")
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if name == "Txn" or (name == "_make" and getattr(func.value, "id", None) == "Txn"):
                found.append(f"{line}: builds a Txn")
            if isinstance(func, ast.Name) and func.id in LANDED_READS:
                found.append(f"{line}: asks what landed ({func.id})")
        if where not in CARRIERS:
            found += [
                f"{line}: passes a transaction ({n})" for n in _arguments(node) if n in TXN_NAMES
            ]
        if (
            isinstance(node, ast.FunctionDef)
            and node.name in LANDED_READS
            and (where, node.name) != ("sink/txn_ids.py", "recorded_txn_version")
        ):
            found.append(f"{line}: defines a read of what landed ({node.name})")
        for module, names in _imported(node):
            if module.startswith("mssql_cdc.sink.ledger."):
                found.append(f"{line}: imports {module}; import from mssql_cdc.sink.ledger")
            if module == "mssql_cdc.sink.txn_ids" and not where.startswith("sink/"):
                found.append(f"{line}: imports {module}")
            found += [f"{line}: imports {n}" for n in names if n in LANDED_READS]
            if "Txn" in names and where not in CARRIERS:
                found.append(f"{line}: imports Txn")
    return found


def _inside_ledger_violations(tree: ast.AST, where: str) -> list[str]:
    """Inside the ledger, only ``ids.py`` spells a transaction id or builds a ``Txn``."""
    if where == "sink/ledger/ids.py":
        return []
    docs = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        line = f"{where}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            found += [f"{line}: spells {t!r}" for t in TXN_TEXT if t in node.value]
        if _spells_a_generation(node):
            found.append(f"{line}: spells a generation's sink id (.g<n>)")
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Txn":
            found.append(f"{line}: builds a Txn")
    return found


def _parse(path: Path) -> tuple[ast.AST, str]:
    return ast.parse(path.read_text(), str(path)), str(path.relative_to(PACKAGE).as_posix())


def _scan(text: str, where: str, rule) -> list[str]:
    return rule(ast.parse(textwrap.dedent(text)), where)


def test_outside_the_sink_no_module_touches_a_delta_table_itself():
    modules = _orchestration()
    assert any(p.name == "bootstrap.py" for p in modules)  # the scan sees the features
    assert [v for p in modules for v in _table_violations(*_parse(p))] == []


def test_only_the_ledger_names_a_transaction_or_asks_what_landed():
    outside = [p for p in _product() if not p.is_relative_to(LEDGER)]
    assert any(p.name == "delta.py" for p in outside)  # the scan sees the sink and silver
    assert any(p.name == "apply.py" for p in outside)
    assert [v for p in outside for v in _ledger_violations(*_parse(p))] == []
    inside = sorted(LEDGER.glob("*.py"))
    assert [p.name for p in inside if p.name in ("ids.py", "ledger.py", "landed.py")] == [
        "ids.py",
        "landed.py",
        "ledger.py",
    ]
    assert [v for p in inside for v in _inside_ledger_violations(*_parse(p))] == []


def test_the_ledger_spells_every_id_and_defines_every_read_of_what_landed():
    ids = _parse(LEDGER / "ids.py")
    assert any("'#events'" in v for v in _ledger_violations(*ids))  # the positive controls
    assert any("builds a Txn" in v for v in _ledger_violations(*ids))
    defined = {
        node.name
        for path in LEDGER.glob("*.py")
        for node in ast.walk(_parse(path)[0])
        if isinstance(node, ast.FunctionDef)
    }
    assert LANDED_READS - {"recorded_txn_version"} <= defined


@pytest.mark.parametrize(
    ("source", "where", "found"),
    [
        ('meta = "orders#events"', "snapshots/manual.py", "spells a transaction id ('#events')"),
        ('x = f"{app}#snapchunks.{lsn}"', "silver/plan.py", "spells a transaction id"),
        ('w.option("txnVersion", 3)', "sink/delta.py", "names Delta's option 'txnVersion'"),
        ('sink = f"{app}.g{n}"', "cli/report.py", "spells a generation's sink id"),
        ('head, _, n = s.rpartition(".g")', "cli/report.py", "spells a generation's sink id"),
        ('t = Txn("orders", 0)', "sink/bronze.py", "builds a Txn"),
        ("t = Txn._make(pair)", "snapshots/seed.py", "builds a Txn"),
        ("append(df, txn=(a, 0))", "snapshots/backfill.py", "passes a transaction (txn)"),
        ("def take(rows, txn_app_id): ...", "snapshots/full.py", "passes a transaction"),
        ("n = last_batch(spark, facts, app)", "sink/delta.py", "asks what landed (last_batch)"),
        ("v = txn_version(spark, ref, a)", "snapshots/resnapshot.py", "asks what landed"),
        ("def bootstrap_lsn(): ...", "sink/facts_table.py", "defines a read of what landed"),
        ("from mssql_cdc.sink import bootstrap_lsn", "snapshots/chunked.py", "imports bootstrap"),
        ("from mssql_cdc.sink.ledger.ids import x", "sink/delta.py", "imports mssql_cdc.sink.le"),
        ("from mssql_cdc.sink.txn_ids import y", "pipeline/x.py", "imports mssql_cdc.sink.txn"),
        ("from mssql_cdc.sink import Txn", "silver/apply.py", "imports Txn"),
    ],
)
def test_the_ledger_scan_finds_what_it_forbids(source, where, found):
    assert any(found in v for v in _scan(source, where, _ledger_violations)), (source, found)


def test_the_scans_pass_what_they_allow():
    allowed = """
        writer.option("txnAppId", txn.app_id)   # Delta's option names, where Txn is carried
        def append(self, df, txn, metadata): ...
        text = "e.g. a value"                   # not a sink id
        ledger.last_batch(sink_id)              # asking the ledger is fine
        from mssql_cdc.sink.ledger import Ledger
    """
    assert _scan(allowed, "sink/tables.py", _ledger_violations) == []
    assert _scan('x = f"{a}#facts"', "sink/ledger/ids.py", _inside_ledger_violations) == []
    assert _scan('x = f"{a}#facts"', "sink/ledger/ledger.py", _inside_ledger_violations)
    assert _scan('t = Txn("a", 1)', "sink/ledger/landed.py", _inside_ledger_violations)


def test_the_table_scan_finds_what_it_forbids():
    assert any("calls .delta_table" in v for v in _table_violations(*_parse(LEDGER / "landed.py")))
    local_rows = _parse(PACKAGE / "sink" / "local_rows.py")
    assert any("calls .createDataFrame" in v for v in _table_violations(*local_rows))
    assert _scan("from mssql_cdc.sink.bronze import x", "cli/x.py", _table_violations)
    assert _scan('spark.sql("MERGE INTO t")', "cli/x.py", _table_violations)


def test_every_txn_app_id_is_named_in_one_module():
    named = [
        p.relative_to(PACKAGE / "sink").as_posix()
        for p in (PACKAGE / "sink").rglob("*.py")
        if any("'#facts'" in v or "'#events'" in v for v in _ledger_violations(*_parse(p)))
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
