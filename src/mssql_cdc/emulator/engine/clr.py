"""The CLR system types in statements: ``hierarchyid::Parse('/1/')``,
``geography::Point(lat, long, srid)``, ``geometry::STGeomFromText(wkt, srid)`` and the
methods the reader uses, ``h.ToString()`` and ``g.STAsBinary()`` ("hierarchyid data type method
reference", "OGC Methods on Geography Instances" in the Transact-SQL docs). Values are held as
:mod:`mssql_cdc.emulator.protocol.clr` describes; a string assigned to such a column converts
as SQL Server's implicit conversion does (``Parse``, SRID 4326 for geography, 0 for geometry).
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from mssql_cdc.emulator.core.errors import SqlError, unsupported
from mssql_cdc.emulator.core.literals import typed_literal
from mssql_cdc.emulator.protocol.clr import (
    CLR_TYPES,
    parse_hierarchyid,
    point,
    spatial_from_wkt,
)
from mssql_cdc.emulator.protocol.types import MAX, SqlType, scalar

__all__ = ["clr_type", "convert", "method_call", "static_call"]

_DEFAULT_SRID = {"geography": 4326, "geometry": 0}
_FROM_TEXT = {"STGEOMFROMTEXT", "STPOINTFROMTEXT", "STLINEFROMTEXT", "STPOLYFROMTEXT"}


def clr_type(name: str) -> SqlType:
    """The column type of a CLR system type name."""
    return scalar(name, length=892 if name == "hierarchyid" else MAX)


def _net_error(type_name: str, exc: ValueError) -> SqlError:
    """Error 6522, how SQL Server reports an exception inside a CLR type's method."""
    return SqlError(
        6522,
        "A .NET Framework error occurred during execution of user-defined routine or "
        f'aggregate "{type_name}": System.FormatException: {exc}',
    )


def convert(type_name: str, value: str) -> str:
    """The storage text of a string converted to ``type_name`` (implicitly or by ``Parse``)."""
    try:
        if type_name == "hierarchyid":
            return parse_hierarchyid(value)
        return spatial_from_wkt(value, _DEFAULT_SRID[type_name])
    except ValueError as exc:
        raise _net_error(type_name, exc) from None


def static_call(
    node: exp.ScopeResolution, args_of: Callable[[list[exp.Expression], str], list[object]]
) -> exp.Expression | None:
    """``<type>::<Method>(constants)`` as a typed constant, or ``None`` if not a CLR type."""
    type_name = node.this.name.lower() if isinstance(node.this, exp.Expression) else ""
    func = node.expression
    if type_name not in CLR_TYPES or not isinstance(func, exp.Anonymous):
        return None
    method = func.name.upper()
    args = args_of(list(func.expressions), f"{type_name}::{func.name}")
    t = clr_type(type_name)
    try:
        if type_name == "hierarchyid" and method == "GETROOT" and not args:
            return typed_literal(t, "/")
        if type_name == "hierarchyid" and method == "PARSE" and len(args) == 1:
            return typed_literal(t, None if args[0] is None else parse_hierarchyid(str(args[0])))
        if type_name != "hierarchyid" and method == "POINT" and len(args) == 3:
            a, b, srid = (float(str(args[0])), float(str(args[1])), int(str(args[2])))
            return typed_literal(t, point(a, b, srid, geography=type_name == "geography"))
        if type_name != "hierarchyid" and method in _FROM_TEXT | {"PARSE"} and args:
            srid = int(str(args[1])) if len(args) > 1 else _DEFAULT_SRID[type_name]
            return typed_literal(t, spatial_from_wkt(str(args[0]), srid))
    except ValueError as exc:
        raise _net_error(type_name, exc) from None
    raise unsupported(f"{type_name}::{func.name}")


def _column(target: exp.Expression) -> exp.Column | None:
    if isinstance(target, exp.Column):
        return target
    if isinstance(target, exp.Identifier):
        return exp.Column(this=target.copy())
    if (
        isinstance(target, exp.Dot)
        and isinstance(target.this, exp.Identifier)
        and isinstance(target.expression, exp.Identifier)
    ):
        return exp.Column(this=target.expression.copy(), table=target.this.copy())
    return None


def method_call(
    node: exp.Dot, column_type: Callable[[exp.Expression], SqlType | None]
) -> exp.Expression | None:
    """``col.ToString()`` / ``col.STAsBinary()`` on a CLR column, or ``None`` if not one."""
    func = node.expression
    if not isinstance(func, exp.Anonymous) or func.expressions:
        return None
    method = func.name.upper()
    if method not in ("TOSTRING", "STASBINARY"):
        return None
    column = _column(node.this)
    if column is None:
        return None
    declared = column_type(column)
    kind = declared.name if declared is not None else None
    if kind is not None and kind not in CLR_TYPES:
        return None
    if method == "TOSTRING" and kind in (None, "hierarchyid"):
        text = exp.Cast(this=column, to=exp.DataType.build("VARCHAR"))  # the held /1/2/ text
        text.meta["sqltype"] = scalar("nvarchar", length=4000)
        return text
    if method == "STASBINARY" and kind in (None, "geography", "geometry"):
        wkb = exp.Anonymous(
            this="from_hex",
            expressions=[
                exp.Anonymous(
                    this="split_part",
                    expressions=[column, exp.Literal.string(";"), exp.Literal.number(2)],
                )
            ],
        )
        wkb.meta["sqltype"] = scalar("varbinary", length=MAX)
        return wkb
    raise unsupported(f"{func.name}() of {kind}")
