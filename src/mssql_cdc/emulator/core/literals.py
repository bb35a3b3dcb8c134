"""Engine literals of SQL Server values: what a constant of a known T-SQL type becomes in the
SQL the engine (DuckDB, through sqlglot) runs.

:func:`typed_literal` builds one from a value in its storage form and tags it with
``meta["sqltype"]`` / ``meta["value"]`` (:func:`tag`); date/time values are canonical text
(:func:`temporal_text`). The rewriter (:mod:`mssql_cdc.emulator.engine.rewrite`), the executor
and the CDC change functions (:mod:`mssql_cdc.emulator.cdc.functions`) use them.
"""

from __future__ import annotations

import datetime as dt
from decimal import ROUND_HALF_UP, Decimal, localcontext

from sqlglot import exp

from mssql_cdc.emulator.protocol.temporal import Temporal, parse_temporal
from mssql_cdc.emulator.protocol.types import SqlType, as_float

__all__ = [
    "constant",
    "has_lone_surrogate",
    "storage_text",
    "string_literal",
    "tag",
    "temporal_text",
    "typed_literal",
]

_DT_BASE_DAYS = dt.date(1900, 1, 1).toordinal() - 1


def temporal_text(t: SqlType, tv: Temporal) -> str:
    """Canonical storage text of a date/time value in type ``t`` (rounded to its scale)."""
    if t.name == "date":
        return Temporal(tv.days if tv.days is not None else _DT_BASE_DAYS, None).date_text()
    if t.name == "time":
        return tv.round_ticks(t.scale).time_text(7)
    full = Temporal(tv.days if tv.days is not None else _DT_BASE_DAYS, tv.ticks or 0, tv.offset)
    if t.name == "datetime":
        r = full.round_datetime()
        return f"{r.date_text()} {r.time_text(3)}"
    if t.name == "smalldatetime":
        r = full.round_ticks(0)
        minutes = ((r.ticks or 0) // 10_000_000 + 30) // 60
        r = Temporal(r.days, minutes * 60 * 10_000_000).round_ticks(0)
        return f"{r.date_text()} {r.time_text(0)}"
    r = full.round_ticks(t.scale)
    text = f"{r.date_text()} {r.time_text(7)}"
    if t.name == "datetimeoffset":
        text += " " + Temporal(None, None, tv.offset or 0).offset_text()
    return text


def tag(node: exp.Expression, t: SqlType | None, value: object = None) -> exp.Expression:
    if t is not None:
        node.meta["sqltype"] = t
    node.meta["value"] = value
    node.meta["constant"] = True
    return node


def storage_text(t: SqlType, value: object) -> str:
    """The engine text of ``value`` (storage form) in type ``t``: a date/time as
    :func:`temporal_text`, an exact numeric rounded half up to its scale with every digit,
    anything else as ``str``."""
    if t.is_temporal:
        return temporal_text(t, parse_temporal(value))
    if t.is_decimal:
        with localcontext() as ctx:
            ctx.prec = 80
            number = Decimal(str(value)).quantize(Decimal(1).scaleb(-t.scale), ROUND_HALF_UP)
        return format(number, "f")
    return str(value)


def typed_literal(t: SqlType, value: object) -> exp.Expression:
    """An engine literal holding ``value`` (already in storage form) of SQL Server type ``t``."""
    node: exp.Expression
    if value is None:
        node = exp.Null()
    elif t.is_binary:
        node = exp.HexString(this=bytes(value).hex())  # type: ignore[call-overload]
    elif t.is_temporal:
        node = exp.Literal.string(storage_text(t, value))
        value = node.this
    elif t.name == "bit":
        node = exp.Boolean(this=bool(value))
    elif t.name in ("real", "float"):
        node = exp.Cast(
            this=exp.Literal.number(repr(as_float(value))), to=exp.DataType.build("DOUBLE")
        )
    elif t.name == "uniqueidentifier":
        node = exp.Cast(this=exp.Literal.string(str(value)), to=exp.DataType.build("UUID"))
    elif t.is_decimal:
        text = storage_text(t, value)  # every digit, never 1E-38
        value = Decimal(text)
        node = exp.Cast(
            this=exp.Literal.string(text), to=exp.DataType.build(t.storage(), dialect="duckdb")
        )
    elif isinstance(value, (int, Decimal)) and not isinstance(value, bool):
        node = exp.Literal.number(format(value, "f") if isinstance(value, Decimal) else str(value))
    else:
        node = string_literal(str(value))
    return tag(node, t, value)


def has_lone_surrogate(text: str) -> bool:
    return any("\ud800" <= c <= "\udfff" for c in text)


def string_literal(text: str) -> exp.Expression:
    """An engine string holding ``text``: NUL characters as ``chr(0)`` (the engine's SQL text
    cannot carry them). A lone UTF-16 surrogate (``NCHAR(55296)``) cannot be held by the engine
    at all: the node is NULL marked ``meta["surrogate"]``, and the executor puts the value into
    the result of a SELECT or refuses to store it."""
    if has_lone_surrogate(text):
        node = exp.Cast(this=exp.Null(), to=exp.DataType.build("VARCHAR"))
        node.meta["surrogate"] = True
        return node
    if "\x00" not in text:
        return exp.Literal.string(text)
    parts: list[exp.Expression] = []
    for i, piece in enumerate(text.split("\x00")):
        if i:
            parts.append(exp.Anonymous(this="chr", expressions=[exp.Literal.number(0)]))
        if piece:
            parts.append(exp.Literal.string(piece))
    out = parts[0]
    for part in parts[1:]:
        out = exp.DPipe(this=out, expression=part)
    return exp.Paren(this=out)


def constant(node: exp.Expression) -> tuple[bool, object]:  # noqa: PLR0911 (a dispatch over kinds)
    """(is constant, Python value) of a literal node after rewriting."""
    if node.meta.get("constant"):
        return True, node.meta.get("value")
    if isinstance(node, exp.Null):
        return True, None
    if isinstance(node, exp.HexString):
        return True, bytes.fromhex(str(node.this))
    if isinstance(node, exp.Boolean):
        return True, bool(node.this)
    if isinstance(node, exp.Literal):
        if node.is_string:
            return True, str(node.this)
        text = str(node.this)
        return True, Decimal(text) if "." in text or "e" in text.lower() else int(text)
    if isinstance(node, exp.Neg):
        ok, inner = constant(node.this)
        if ok and isinstance(inner, (int, Decimal)):
            return True, -inner
    return False, None
