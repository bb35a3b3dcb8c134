"""Every SQL Server object the product names is in the inventory (docs/reference/sql-inventory.md)
with the Microsoft page that documents it.

The product's T-SQL is read from its source, not from a run: every string constant (and every
f-string's constant parts) outside the emulator is scanned for schema-qualified system objects
(``sys.``, ``cdc.``, ``msdb.dbo.``, ``INFORMATION_SCHEMA.``), and every statement (a string that
starts with SELECT, EXEC, SET or WITH, outside the Delta side's Spark SQL) for the built-in
functions it calls. A name missing from
the inventory's tables fails the test, so that a new statement cannot be sent (or advised)
without its documented source.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "src" / "mssql_cdc"
INVENTORY = ROOT / "docs" / "reference" / "sql-inventory.md"

#: a schema-qualified system object; ``<ci>`` templates show up as ``{}`` or ``[`` after it
OBJECT = re.compile(r"(?i)(?<![\w.])((?:sys|cdc|msdb\.dbo|information_schema)\.\[?[a-z_][\w$#]*)")
STATEMENT = re.compile(r"^\s*(SELECT|EXEC|SET|WITH)\b")
FUNCTION = re.compile(r"\b([A-Z][A-Z0-9_]*[A-Z0-9])\s*\(")
#: words of T-SQL's grammar (and type names) that a "(" may follow: not functions
KEYWORDS = frozenset({"AND", "AS", "DECIMAL", "EXISTS", "FROM", "IN", "NOT", "OR", "TOP"})
#: packages whose statements are Spark SQL on Delta tables, never T-SQL
SPARK_SQL = frozenset({"sink", "silver"})


def _strings(tree: ast.AST) -> Iterator[tuple[int, str]]:
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docstrings.add(id(body[0].value))
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            parts = (v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
            yield node.lineno, "".join(str(p) for p in parts)
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
        ):
            yield node.lineno, node.value


def _normalize(name: str) -> str:
    """``cdc.[dbo_orders_CT`` and ``cdc.fn_cdc_get_all_changes_{}`` as the inventory's
    templates; everything lower case."""
    name = name.lower().replace("[", "")
    if name.startswith("cdc.fn_cdc_get_all_changes_"):
        return "cdc.fn_cdc_get_all_changes_<ci>"
    if name.startswith("cdc.fn_cdc_get_net_changes_"):
        return "cdc.fn_cdc_get_net_changes_<ci>"
    return name


def product_names() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """(system objects, built-in functions), each name -> where it appears."""
    objects: dict[str, set[str]] = {}
    functions: dict[str, set[str]] = {}
    for path in sorted(SOURCE.rglob("*.py")):
        relative = path.relative_to(SOURCE)
        if relative.parts[0] == "emulator":
            continue
        for line, text in _strings(ast.parse(path.read_text())):
            where = f"{relative}:{line}"
            for name in OBJECT.findall(text):
                objects.setdefault(_normalize(name), set()).add(where)
            if STATEMENT.search(text) and relative.parts[0] not in SPARK_SQL:
                for name in FUNCTION.findall(text):
                    if name not in KEYWORDS:
                        functions.setdefault(name, set()).add(where)
    return objects, functions


def inventory_names() -> set[str]:
    """The first column of every table row of the inventory's "System objects" section (its
    built-in functions included): the backticked name(s)."""
    text = INVENTORY.read_text()
    section = text[text.index("## System objects") : text.index("## Statements and the columns")]
    names: set[str] = set()
    for line in section.splitlines():
        if not line.startswith("| `"):
            continue
        first = line.split("|")[1]
        names.update(n.lower() for n in re.findall(r"`([^`]+)`", first))
    return names


def test_every_system_object_the_product_names_is_in_the_inventory():
    objects, _ = product_names()
    listed = inventory_names()
    missing = {name: sorted(where) for name, where in objects.items() if name not in listed}
    assert not missing, f"add these to {INVENTORY.relative_to(ROOT)}: {missing}"


def test_every_built_in_function_a_statement_calls_is_in_the_inventory():
    _, functions = product_names()
    listed = inventory_names()
    missing = {
        name: sorted(where)
        for name, where in functions.items()
        if f"{name.lower()}()" not in listed
    }
    assert not missing, f"add these to {INVENTORY.relative_to(ROOT)}: {missing}"


def test_the_scan_finds_what_the_product_sends():
    """The scanner itself: the change read, the capture-instance procedure and the clock."""
    objects, functions = product_names()
    assert "cdc.lsn_time_mapping" in objects
    assert "sys.sp_cdc_help_change_data_capture" in objects
    assert "cdc.fn_cdc_get_all_changes_<ci>" in objects
    assert {"SYSUTCDATETIME", "COUNT_BIG", "OBJECT_ID"} <= set(functions)
    assert not KEYWORDS & set(functions)


def test_the_inventory_lists_nothing_the_product_no_longer_names():
    """Each listed object or function is still named somewhere in the product (change tables
    are named through a template)."""
    objects, functions = product_names()
    named = set(objects) | {f"{f.lower()}()" for f in functions} | {"cdc.<ci>_ct"}
    stale = sorted(inventory_names() - named)
    assert not stale, f"no longer named by the product, remove from the inventory: {stale}"
