"""Parameter declarations (``@a int, @b nvarchar(10) OUTPUT``) of ``sp_executesql`` and RPC.

Also owns how a type name is spelled for sqlglot (:func:`spell_types`), which the executor's
parser uses too.
"""

from __future__ import annotations

import re

import sqlglot
from sqlglot import exp

from mssql_cdc.emulator.core.errors import syntax_near, unsupported
from mssql_cdc.emulator.protocol.types import SqlType, from_datatype, normalize_type_names

__all__ = ["parse_param_declarations", "spell_types"]

_REAL = re.compile(r"\breal\b", re.IGNORECASE)


def spell_types(text: str) -> str:
    """T-SQL type names as sqlglot reads them: ``real`` is ``float(24)``; ntext survives."""
    return normalize_type_names(_REAL.sub("float(24)", text))  # tds-types work


def _datatype(text: str) -> SqlType:
    try:
        spelled = spell_types(text)
        node = sqlglot.parse_one(f"CAST(NULL AS {spelled})", read="tsql")
    except sqlglot.errors.ParseError:
        raise syntax_near(text) from None
    assert isinstance(node, exp.Cast)
    try:
        return from_datatype(node.to)
    except ValueError as exc:
        raise unsupported(str(exc)) from None


def parse_param_declarations(text: str) -> dict[str, SqlType]:
    """``@a int, @b nvarchar(10) OUTPUT`` -> {"a": int, "b": nvarchar(10)}."""
    out: dict[str, SqlType] = {}
    depth = 0
    part = ""
    parts = []
    for char in text:
        depth += char == "("
        depth -= char == ")"
        if char == "," and depth == 0:
            parts.append(part)
            part = ""
        else:
            part += char
    parts.append(part)
    for raw in parts:
        item = raw.strip()
        if not item:
            continue
        name, _, type_text = item.partition(" ")
        type_text = re.sub(r"\s+(OUTPUT|OUT|READONLY)\s*$", "", type_text.strip(), flags=re.I)
        out[name.lstrip("@").lower()] = _datatype(type_text)
    return out
