"""The built-in functions and aggregates the emulator computes through the engine, each with
the result type and the values its Microsoft reference page gives; and the refusal of every
other one.

sqlglot translates many T-SQL functions into DuckDB's, whose results can differ from SQL
Server's in type (``COUNT`` a ``bigint``, ``SUM`` of ``int`` a ``decimal(38,0)``, ``UPPER('a')``
an ``nvarchar(4000)``) or in value (``LEN`` counting trailing spaces, ``CHARINDEX`` and
``REPLACE`` matching case under a case-insensitive collation, ``AVG`` of integers a
fraction). :func:`annotate` gives each function it knows SQL Server's type
(``meta["sqltype"]``) and, where the engine's value differs, an expression that computes
SQL Server's; any other function is error 40517 naming it (:data:`FUNCTIONS` lists those it
knows). Pages: "COUNT", "COUNT_BIG", "SUM", "AVG", "MIN", "MAX", "ISNULL", "COALESCE",
"CASE", "IIF", "NULLIF", "UPPER", "LOWER", "LTRIM", "RTRIM", "TRIM", "SUBSTRING", "LEFT",
"RIGHT", "LEN", "CHARINDEX", "REPLACE", "CONCAT", "ABS", "ROUND", "FLOOR", "CEILING",
"POWER", "NEWID", "ROW_NUMBER", "DAY", "MONTH", "YEAR" (Transact-SQL), and "Data type
precedence (Transact-SQL)" for the types of ``CASE``, ``COALESCE`` and ``IIF``.

String matching follows the default collation, SQL_Latin1_General_CP1_CI_AS: case-insensitive
(``CHARINDEX('B', 'abc')`` is 2). Strings compare as the engine compares them otherwise
(docs/emulator.md).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from duckdb import func, sqltypes
from sqlglot import exp

from mssql_cdc.emulator.core.errors import SqlError, unsupported
from mssql_cdc.emulator.core.literals import constant, typed_literal
from mssql_cdc.emulator.protocol.types import MAX, SqlType, scalar

if TYPE_CHECKING:
    import duckdb

__all__ = ["FUNCTIONS", "annotate", "pad", "precedence_type", "register", "string_function"]

TypeOf = Callable[[exp.Expression], "SqlType | None"]

#: "Data type precedence (Transact-SQL)", highest first (user-defined and CLR types left out)
PRECEDENCE = (
    "sql_variant",
    "xml",
    "datetimeoffset",
    "datetime2",
    "datetime",
    "smalldatetime",
    "date",
    "time",
    "float",
    "real",
    "decimal",
    "numeric",
    "money",
    "smallmoney",
    "bigint",
    "int",
    "smallint",
    "tinyint",
    "bit",
    "ntext",
    "text",
    "image",
    "rowversion",
    "uniqueidentifier",
    "nvarchar",
    "nchar",
    "varchar",
    "char",
    "varbinary",
    "binary",
)
_INTEGERS = ("bigint", "int", "smallint", "tinyint")
_EXACT_DIGITS = {"bigint": 19, "int": 10, "smallint": 5, "tinyint": 3, "bit": 1}
_CHARS = ("nvarchar", "nchar", "varchar", "char")
_INT = scalar("int")
_BIGINT = scalar("bigint")

#: the sqlglot function classes the emulator computes, by their T-SQL names
FUNCTIONS = (
    "COUNT",
    "COUNT_BIG",
    "SUM",
    "AVG",
    "MIN",
    "MAX",
    "ISNULL",
    "COALESCE",
    "CASE",
    "IIF",
    "NULLIF",
    "UPPER",
    "LOWER",
    "LTRIM",
    "RTRIM",
    "TRIM",
    "SUBSTRING",
    "LEFT",
    "RIGHT",
    "LEN",
    "CHARINDEX",
    "REPLACE",
    "CONCAT",
    "ABS",
    "ROUND",
    "FLOOR",
    "CEILING",
    "POWER",
    "NEWID",
    "ROW_NUMBER",
    "DAY",
    "MONTH",
    "YEAR",
)
#: function classes other modules of the engine handle (or that are part of the syntax)
_HANDLED_ELSEWHERE = (
    exp.Cast,
    exp.TryCast,
    exp.Convert,
    exp.Collate,
    exp.And,
    exp.Or,
    exp.Xor,
    exp.Not,
    exp.Exists,
    exp.Anonymous,
    exp.CurrentTimestamp,
    exp.CurrentTimestampLTZ,
    exp.CurrentUser,
    exp.CurrentSchema,
    exp.ObjectId,
    exp.Distinct,
)


def precedence_type(types: list[SqlType]) -> SqlType:
    """The type of an expression whose values come from operands of ``types`` (``CASE``,
    ``COALESCE``, ``IIF``): the one of highest precedence; strings take the longest length,
    decimals the digits and scale every operand needs."""
    best = min(types, key=lambda t: _rank(t.name))
    if best.name in _CHARS or best.name in ("varbinary", "binary"):
        lengths = [t.length for t in types if t.name in _CHARS or t.is_binary]
        length = MAX if MAX in lengths else max(lengths)
        return replace(best, length=length)
    if best.name in ("decimal", "numeric"):
        scale = max(_scale(t) for t in types)
        whole = max(_precision(t) - _scale(t) for t in types)
        return replace(best, precision=min(38, whole + scale), scale=scale)
    return best


def _rank(name: str) -> int:
    return PRECEDENCE.index(name) if name in PRECEDENCE else len(PRECEDENCE)


def _precision(t: SqlType) -> int:
    return t.precision if t.name in ("decimal", "numeric") else _EXACT_DIGITS.get(t.name, 0)


def _scale(t: SqlType) -> int:
    return t.scale if t.name in ("decimal", "numeric") else 0


def _typed(node: exp.Expression, t: SqlType | None) -> exp.Expression:
    if t is not None:
        node.meta["sqltype"] = t
    return node


def _cast(node: exp.Expression, t: SqlType) -> exp.Expression:
    """``node`` converted to ``t``'s storage; inside ``OVER`` only typed (the window converts:
    :func:`annotate` of :class:`exp.Window`)."""
    if isinstance(node.parent, exp.Window) and node.arg_key == "this":
        return _typed(node, t)
    return _typed(exp.Cast(this=node, to=exp.DataType.build(t.storage(), dialect="duckdb")), t)


def _need(t: SqlType | None, name: str) -> SqlType:
    if t is None:
        raise unsupported(f"{name} of an expression of a type the emulator does not know")
    return t


def _invalid_operand(t: SqlType, name: str) -> SqlError:
    return SqlError(8117, f"Operand data type {t.name} is invalid for {name.lower()} operator.")


def annotate(node: exp.Expression, type_of: TypeOf) -> exp.Expression:  # noqa: PLR0911, PLR0912 (a dispatch over functions)
    """``node`` typed as SQL Server types it (and computed as SQL Server does), or error 40517
    for a function the emulator does not have. Not a function: ``node`` unchanged."""
    if not isinstance(node, (exp.Func, exp.Window)) or isinstance(node, _HANDLED_ELSEWHERE):
        return node
    if isinstance(node, exp.Count):
        return _cast(node, _BIGINT if node.args.get("big_int") else _INT)
    if isinstance(node, exp.Sum):
        return _sum(node, type_of)
    if isinstance(node, exp.Avg):
        if isinstance(node.parent, exp.Window):
            raise unsupported("AVG over a window")
        return _avg(node, type_of)
    if isinstance(node, (exp.Min, exp.Max)):
        name = "MIN" if isinstance(node, exp.Min) else "MAX"
        t = _need(type_of(node.this), name)
        if t.name in ("bit", "uniqueidentifier"):
            raise _invalid_operand(t, name)
        return _typed(node, t)
    if isinstance(node, exp.Coalesce):
        return _coalesce(node, type_of)
    if isinstance(node, exp.If) and isinstance(node.parent, exp.Case):
        return node  # a WHEN ... THEN of a CASE
    if isinstance(node, (exp.Case, exp.If)):
        branches = (
            [i.args.get("true") for i in node.args.get("ifs") or []] + [node.args.get("default")]
            if isinstance(node, exp.Case)
            else [node.args.get("true"), node.args.get("false")]
        )
        types = [type_of(b) for b in branches if isinstance(b, exp.Expression)]
        known = [t for t in types if t is not None]
        if not known:
            return node
        return _cast(node, precedence_type(known))
    if isinstance(node, exp.Nullif):
        return _typed(node, type_of(node.this))
    if isinstance(node, (exp.Upper, exp.Lower)):
        t = _need(type_of(node.this), "UPPER" if isinstance(node, exp.Upper) else "LOWER")
        if not t.is_string or t.is_long:
            raise unsupported(f"{node.sql_name()} of {t.sql()}")
        node.set("this", pad(node.this, t))
        return _typed(node, _varying(t))  # "UPPER": varchar or nvarchar
    if isinstance(node, exp.Trim):
        t = _need(type_of(node.this), "TRIM")
        if node.args.get("expression") is not None:  # TRIM(chars FROM s)
            raise unsupported("TRIM with characters")
        node.set("this", pad(node.this, t))
        return _typed(node, t if t.name in ("varchar", "nvarchar") else _varying(t))
    if isinstance(node, exp.Concat):
        return _concat(node, type_of)
    if isinstance(node, exp.Abs):
        return _typed(node, type_of(node.this))
    if isinstance(node, exp.Round):
        return _round(node, type_of)
    if isinstance(node, (exp.Floor, exp.Ceil)):
        t = _need(type_of(node.this), "FLOOR")
        result = replace(t, scale=0) if t.name in ("decimal", "numeric") else t
        return _cast(node, result)
    if isinstance(node, exp.Pow):
        t = _need(type_of(node.this), "POWER")
        if t.name in _INTEGERS:  # the result has the first argument's type: truncated
            return _cast(exp.Anonymous(this="trunc", expressions=[node]), t)
        if t.name in ("float", "real"):
            return _typed(node, scalar("float"))
        raise unsupported(f"POWER of {t.sql()}")
    if isinstance(node, exp.Uuid):
        return _typed(node, scalar("uniqueidentifier"))
    if isinstance(node, exp.Window):
        if isinstance(node.this, exp.RowNumber):
            return _cast(node, _BIGINT)
        inner = node.this.meta.get("sqltype")
        if isinstance(inner, SqlType):  # an aggregate over a window, typed above
            return _cast(node, inner)
        raise unsupported(f"the window function {node.this.sql(dialect='tsql')}")
    if isinstance(node, exp.RowNumber):
        return node  # typed with its OVER clause (Window)
    name = node.sql_name() if hasattr(node, "sql_name") else type(node).__name__.upper()
    raise unsupported(f"the function {name}")


def pad(node: exp.Expression, t: SqlType | None) -> exp.Expression:
    """A ``char(n)``/``nchar(n)`` value with its trailing spaces (the engine holds it without
    them; SQL Server's functions see them)."""
    if t is None or t.name not in ("char", "nchar") or t.length <= 0:
        return node
    spaces = [node, exp.Literal.number(t.length), exp.Literal.string(" ")]
    return exp.Anonymous(this="rpad", expressions=spaces)


def _varying(t: SqlType) -> SqlType:
    """The varying type of a character type (varchar for char, nvarchar for nchar)."""
    if t.name in ("varchar", "nvarchar"):
        return t
    if t.name == "char":
        return replace(t, name="varchar")
    if t.name == "nchar":
        return replace(t, name="nvarchar")
    return scalar("varchar", length=8000)


def _sum(node: exp.Sum, type_of: TypeOf) -> exp.Expression:
    t = _need(type_of(node.this), "SUM")
    if t.name in ("tinyint", "smallint", "int"):
        return _cast(node, _INT)
    if t.name == "bigint":
        return _cast(node, _BIGINT)
    if t.name in ("decimal", "numeric"):
        return _cast(node, replace(t, precision=38))
    if t.name in ("money", "smallmoney"):
        return _cast(node, scalar("money", precision=19, scale=4))
    if t.name in ("float", "real"):
        return _cast(node, scalar("float"))
    raise _invalid_operand(t, "SUM")


def _avg(node: exp.Avg, type_of: TypeOf) -> exp.Expression:
    """AVG of integers is an integer: the sum divided by the count, truncated."""
    t = _need(type_of(node.this), "AVG")
    if t.name in _INTEGERS:
        result = _BIGINT if t.name == "bigint" else _INT
        arg = node.this
        divide = exp.IntDiv(this=exp.Sum(this=arg.copy()), expression=exp.Count(this=arg.copy()))
        return _cast(exp.Paren(this=divide), result)
    if t.name in ("float", "real"):
        return _typed(node, scalar("float"))
    raise unsupported(f"AVG of {t.sql()}")


def _coalesce(node: exp.Coalesce, type_of: TypeOf) -> exp.Expression:
    """ISNULL (``is_null``): the first argument's type, the second converted (and cut) to it;
    COALESCE: the type of highest precedence."""
    args = [node.this, *node.expressions]
    types = [type_of(a) for a in args]
    if node.args.get("is_null"):
        first = types[0] or types[1] or _INT
        if first.is_string and first.length != MAX:
            value = exp.Coalesce(this=args[0], expressions=args[1:])
            cut = exp.Anonymous(this="left", expressions=[value, exp.Literal.number(first.length)])
            return _typed(cut, first)
        return _cast(exp.Coalesce(this=args[0], expressions=args[1:]), first)
    known = [t for t in types if t is not None]
    if not known:
        return node
    return _cast(node, precedence_type(known))


def _concat(node: exp.Concat, type_of: TypeOf) -> exp.Expression:
    """CONCAT: NULL is an empty string; nvarchar when an argument is Unicode, else varchar;
    the lengths added ((max) past 8000 bytes or when an argument is (max))."""
    types = [
        _need(type_of(a), "CONCAT")
        for a in node.expressions
        if not isinstance(a, exp.Null)  # an untyped NULL adds nothing
    ]
    for t in types:
        if not (t.is_string or t.name in _INTEGERS or t.name == "bit"):
            raise unsupported(f"CONCAT of {t.sql()}")
    wide = any(t.name in ("nchar", "nvarchar", "ntext") for t in types)
    length = 0
    for t in types:
        length += t.length if t.is_string else (_EXACT_DIGITS.get(t.name, 1) + 1)
    cap = 4000 if wide else 8000
    if any(t.is_max for t in types) or length > cap:
        length = MAX
    node.set("expressions", [pad(a, type_of(a)) for a in node.expressions])
    return _typed(node, scalar("nvarchar" if wide else "varchar", length=length))


def _round(node: exp.Round, type_of: TypeOf) -> exp.Expression:
    t = _need(type_of(node.this), "ROUND")
    if node.args.get("truncate") is not None:
        raise unsupported("ROUND with a function argument")
    if t.name in _INTEGERS or t.is_decimal:
        return _cast(node, t)
    if t.name in ("float", "real"):
        return _typed(node, scalar("float"))
    raise unsupported(f"ROUND of {t.sql()}")


# --- the string functions sqlglot would translate (parsed as calls: dialect.OWN_FUNCTIONS) ---

_CASE_INSENSITIVE = re.IGNORECASE


def _len(text: str | None) -> int | None:
    if text is None:
        return None
    return len(text.rstrip(" ").encode("utf-16-le", errors="surrogatepass")) // 2


def _charindex(find: str | None, text: str | None, start: int | None) -> int | None:
    if find is None or text is None:
        return None
    begin = max((start or 1) - 1, 0)
    if find == "":
        return 0
    found = re.compile(re.escape(find), _CASE_INSENSITIVE).search(text, begin)
    return 0 if found is None else found.start() + 1


def _replace(text: str | None, pattern: str | None, value: str | None) -> str | None:
    if text is None or pattern is None or value is None:
        return None
    if pattern == "":
        return text
    return re.compile(re.escape(pattern), _CASE_INSENSITIVE).sub(lambda m: value, text)


def _substring(text: str | None, start: int | None, length: int | None) -> str | None:
    if text is None or start is None or length is None:
        return None
    if length < 0:
        raise SqlError(537, "Invalid length parameter passed to the LEFT or SUBSTRING function.")
    end = start + length
    begin = max(start, 1)
    return text[begin - 1 : max(end - 1, begin - 1)] if end > begin else ""


def _left(text: str | None, n: int | None) -> str | None:
    if text is None or n is None:
        return None
    if n < 0:
        raise SqlError(536, "Invalid length parameter passed to the left function.")
    return text[:n]


def _right(text: str | None, n: int | None) -> str | None:
    if text is None or n is None:
        return None
    if n < 0:
        raise SqlError(536, "Invalid length parameter passed to the right function.")
    return text[len(text) - n :] if n else ""


_PY: dict[str, Callable[..., Any]] = {
    "LEN": _len,
    "CHARINDEX": _charindex,
    "REPLACE": _replace,
    "SUBSTRING": _substring,
    "LEFT": _left,
    "RIGHT": _right,
}
_ARITY = {
    "LEN": (1, 1),
    "CHARINDEX": (2, 3),
    "REPLACE": (3, 3),
    "SUBSTRING": (3, 3),
    "LEFT": (2, 2),
    "RIGHT": (2, 2),
}


def string_function(name: str, args: list[exp.Expression], type_of: TypeOf) -> exp.Expression:
    """``LEN``, ``CHARINDEX``, ``REPLACE``, ``SUBSTRING``, ``LEFT``, ``RIGHT`` of character
    strings: computed by the engine function ``__mssql_<name>`` (:func:`register`), or folded
    when every argument is a constant; typed as their pages say (``int`` for LEN and
    CHARINDEX, ``bigint`` over a (max) type; the string functions keep their argument's
    varying type)."""
    least, most = _ARITY[name]
    if not least <= len(args) <= most:
        if least == most:
            raise SqlError(174, f"The {name.lower()} function requires {least} argument(s).")
        raise SqlError(
            189, f"The {name.lower()} function requires {least} to {most} arguments.", klass=15
        )
    text_arg = args[1] if name == "CHARINDEX" else args[0]
    t = type_of(text_arg)
    ok, value = constant(text_arg)
    if t is None and ok and value is None:
        t = scalar("varchar", length=1)
    t = _need(t, name)
    if not t.is_string or t.is_long:
        if not t.is_string:
            raise unsupported(f"{name} of {t.sql()}")
        raise SqlError(
            8116,
            f"Argument data type {t.name} is invalid for argument 1 of {name.lower()} function.",
        )
    if name in ("LEN", "CHARINDEX"):
        result = _BIGINT if t.is_max else _INT
    elif name == "REPLACE":
        wide = t.name in ("nchar", "nvarchar") or any(
            (a_t := type_of(a)) is not None and a_t.name in ("nchar", "nvarchar") for a in args
        )
        result = scalar(
            "nvarchar" if wide else "varchar", length=MAX if t.is_max else (4000 if wide else 8000)
        )
    else:
        result = _varying(t)
    values = [constant(a) for a in args]
    if all(ok for ok, _ in values):
        raw = [_padded(type_of(a), v) for a, (_, v) in zip(args, values, strict=True)]
        if name == "CHARINDEX" and len(raw) == 2:
            raw.append(1)
        python = _PY[name]
        return typed_literal(result, python(*[_plain(v) for v in raw]))
    engine_args: list[exp.Expression] = [
        exp.Cast(this=pad(a, type_of(a)), to=exp.DataType.build(kind))
        for a, kind in zip(args, _KINDS[name], strict=False)
    ]
    if name == "CHARINDEX" and len(args) == 2:
        engine_args.append(exp.Literal.number(1))
    return _typed(exp.Anonymous(this=f"__mssql_{name.lower()}", expressions=engine_args), result)


def _padded(t: SqlType | None, value: object) -> object:
    if t is not None and t.name in ("char", "nchar") and isinstance(value, str):
        return value.ljust(t.length)
    return value


def _plain(value: object) -> object:
    if isinstance(value, str) or value is None:
        return value
    return int(value)  # type: ignore[call-overload]


_KINDS = {
    "LEN": ["VARCHAR"],
    "CHARINDEX": ["VARCHAR", "VARCHAR", "BIGINT"],
    "REPLACE": ["VARCHAR", "VARCHAR", "VARCHAR"],
    "SUBSTRING": ["VARCHAR", "BIGINT", "BIGINT"],
    "LEFT": ["VARCHAR", "BIGINT"],
    "RIGHT": ["VARCHAR", "BIGINT"],
}


def register(engine: duckdb.DuckDBPyConnection) -> None:
    """The engine functions of :func:`string_function`."""
    text, big = sqltypes.VARCHAR, sqltypes.BIGINT
    kinds = {"VARCHAR": text, "BIGINT": big}
    for name, python in _PY.items():
        params: list[Any] = [kinds[k] for k in _KINDS[name]]
        result = big if name in ("LEN", "CHARINDEX") else text
        engine.create_function(
            f"__mssql_{name.lower()}", python, params, result, null_handling=func.SPECIAL
        )
