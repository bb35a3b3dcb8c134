"""No product function takes more than 7 parameters (``self``/``cls`` not counted, ``*args``
and ``**kwargs`` one each): a longer list is a clump of arguments that belongs in a bound object
(``Ledger``, ``StreamTables``, ``TableReader``) or a small frozen type. Only the public verbs
whose signatures are frozen public API are exempt, listed by name. Checked on the source's
syntax tree (no Spark)."""

from __future__ import annotations

import ast
import inspect
import textwrap
from pathlib import Path

import mssql_cdc

PACKAGE = Path(mssql_cdc.__file__).parent
MOST = 7
#: the public verbs whose signatures are the public API (docs/api.md), frozen
PUBLIC = (
    mssql_cdc.CdcStream.to_delta,
    mssql_cdc.CdcStream.backfill,
    mssql_cdc.reconcile,
    mssql_cdc.apply_changes,
    mssql_cdc.start_many,
    mssql_cdc.start_database,
)


def _count(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    a = node.args
    names = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    names += [x.arg for x in (a.vararg, a.kwarg) if x is not None]
    return len([n for n in names if n not in ("self", "cls")])


def _defs(tree: ast.AST, prefix: str = "") -> list[tuple[str, ast.FunctionDef]]:
    """``(qualified name, def)`` of every function in ``tree``, methods as ``Class.method``."""
    out: list[tuple[str, ast.FunctionDef]] = []
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            out.append((prefix + node.name, node))  # type: ignore[arg-type]
            out += _defs(node, f"{prefix}{node.name}.<locals>.")
        elif isinstance(node, ast.ClassDef):
            out += _defs(node, f"{prefix}{node.name}.")
    return out


def _wide(tree: ast.AST, where: str) -> list[str]:
    return [
        f"{where}:{node.lineno} {name} takes {_count(node)}"
        for name, node in _defs(tree)
        if _count(node) > MOST
    ]


def _exempt() -> set[str]:
    out = set()
    for verb in PUBLIC:
        where = Path(inspect.getsourcefile(verb) or "").relative_to(PACKAGE).as_posix()
        line = inspect.getsourcelines(verb)[1]
        out.add(f"{where}:{line} {verb.__qualname__}")
    return out


def test_no_product_function_takes_more_than_seven_parameters():
    product = sorted(p for p in PACKAGE.rglob("*.py") if "emulator" not in p.parts)
    wide = {
        entry
        for path in product
        for entry in _wide(ast.parse(path.read_text()), path.relative_to(PACKAGE).as_posix())
    }
    exempt = _exempt()
    # the exempt verbs are the wide ones found, each once (a verb that narrowed leaves the list)
    assert {w.rsplit(" takes ", 1)[0] for w in wide} - exempt == set()
    assert exempt <= {w.rsplit(" takes ", 1)[0] for w in wide}


def test_the_scan_counts_every_kind_of_parameter():
    source = """
        def eight(a, b, /, c, d=1, *e, f, g, **h): ...
        class C:
            def seven(self, a, b, c, d, e, f, g): ...
            def outer(self):
                def inner(a, b, c, d, e, f, g, h): ...
    """
    tree = ast.parse(textwrap.dedent(source))
    assert [(n, _count(d)) for n, d in _defs(tree)] == [
        ("eight", 8),
        ("C.seven", 7),
        ("C.outer", 0),
        ("C.outer.<locals>.inner", 8),
    ]
    assert [w.split(" ", 1)[1] for w in _wide(tree, "x.py")] == [
        "eight takes 8",
        "C.outer.<locals>.inner takes 8",
    ]
