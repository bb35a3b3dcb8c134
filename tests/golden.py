"""The golden all-types query: one SELECT whose every column has an exactly known value.

Every third-party driver test (tests/emulator/test_drivers_*.py), and later the project's own
native client, runs :data:`GOLDEN_SQL` and compares what it decodes with :data:`COLUMNS`.
The query is plain T-SQL that a real SQL Server answers the same way (run it there through
``MSSQL_CDC_TEST_SERVER``); it covers every type a CDC reader meets
(docs/reference/bronze-schema.md#type-map) with NULLs and extremes.

Canonical expected values (``GoldenColumn.value``):

* integers ``int``, ``bit`` ``bool``, ``real``/``float`` ``float`` (the exact IEEE value),
  decimal/numeric/money ``Decimal``;
* date and time values as SQL Server's own text (CONVERT style 121 / ISO 8601 with exactly
  ``scale`` fractional digits, ``datetimeoffset`` with `` +hh:mm``), because Python's
  ``datetime`` stops at microseconds; :func:`python_value` gives the ``datetime`` a driver
  returns (truncated to microseconds);
* character data ``str`` (``char(n)``/``nchar(n)`` already padded), binary ``bytes``,
  ``uniqueidentifier`` ``uuid.UUID``, sql_variant the value of its base type;
* ``None`` for NULL.
"""

from __future__ import annotations

import datetime as dt
import math
import struct
import uuid
from dataclasses import dataclass
from decimal import Decimal

__all__ = [
    "COLUMNS",
    "GOLDEN_SQL",
    "GoldenColumn",
    "by_name",
    "mismatches",
    "python_value",
    "truncate_fraction",
    "utf8_downgraded",
]


@dataclass(frozen=True)
class GoldenColumn:
    name: str
    #: the T-SQL expression of the column
    expr: str
    #: the SQL Server type of the result column, as T-SQL spells it
    sql_type: str
    #: the canonical expected value (see the module docstring)
    value: object
    #: family: int bit float decimal money datetime date time datetime2 datetimeoffset guid
    #: str bytes xml variant rowversion
    kind: str
    #: for sql_variant: the base type of the value
    base_type: str = ""


def _real(value: float) -> float:
    """The float32 nearest to ``value``, as a Python float (what ``real`` holds)."""
    return float(struct.unpack("<f", struct.pack("<f", value))[0])


def _n(text: str) -> str:
    return "N'" + text.replace("'", "''") + "'"


_C: list[GoldenColumn] = []


def _add(name: str, expr: str, sql_type: str, value: object, kind: str, base: str = "") -> None:  # noqa: PLR0917
    _C.append(GoldenColumn(name, expr, sql_type, value, kind, base))


# --- exact numerics -------------------------------------------------------------------------
_add("tinyint_min", "CAST(0 AS tinyint)", "tinyint", 0, "int")
_add("tinyint_max", "CAST(255 AS tinyint)", "tinyint", 255, "int")
_add("smallint_min", "CAST(-32768 AS smallint)", "smallint", -32768, "int")
_add("smallint_max", "CAST(32767 AS smallint)", "smallint", 32767, "int")
_add("int_min", "CAST(-2147483648 AS int)", "int", -(2**31), "int")
_add("int_max", "CAST(2147483647 AS int)", "int", 2**31 - 1, "int")
_add("bigint_min", "CAST(-9223372036854775808 AS bigint)", "bigint", -(2**63), "int")
_add("bigint_max", "CAST(9223372036854775807 AS bigint)", "bigint", 2**63 - 1, "int")
_add("int_null", "CAST(NULL AS int)", "int", None, "int")
_add("bit_1", "CAST(1 AS bit)", "bit", True, "bit")
_add("bit_0", "CAST(0 AS bit)", "bit", False, "bit")
_add("bit_null", "CAST(NULL AS bit)", "bit", None, "bit")
_NINES = "9" * 38
_add(
    "dec38_min",
    f"CAST('-{_NINES}' AS decimal(38,0))",
    "decimal(38,0)",
    Decimal("-" + _NINES),
    "decimal",
)
_add("dec38_max", f"CAST('{_NINES}' AS decimal(38,0))", "decimal(38,0)", Decimal(_NINES), "decimal")
_FRAC38 = "0.12345678901234567890123456789012345678"
_add(
    "dec38_38",
    f"CAST('{_FRAC38}' AS decimal(38,38))",
    "decimal(38,38)",
    Decimal(_FRAC38),
    "decimal",
)
_add(
    "dec38_38_neg",
    f"CAST('-0.{_NINES}' AS decimal(38,38))",
    "decimal(38,38)",
    Decimal("-0." + _NINES),
    "decimal",
)
_add(
    "dec9_2",
    "CAST('-9999999.99' AS decimal(9,2))",
    "decimal(9,2)",
    Decimal("-9999999.99"),
    "decimal",
)
_add(
    "dec19_4",
    "CAST('999999999999999.9999' AS decimal(19,4))",
    "decimal(19,4)",
    Decimal("999999999999999.9999"),
    "decimal",
)
_add(
    "dec28_10",
    "CAST('-123456789012345678.0123456789' AS decimal(28,10))",
    "decimal(28,10)",
    Decimal("-123456789012345678.0123456789"),
    "decimal",
)
_add(
    "numeric_10_2",
    "CAST('12345678.90' AS numeric(10,2))",
    "numeric(10,2)",
    Decimal("12345678.90"),
    "decimal",
)
_add("dec_zero", "CAST('0' AS decimal(5,2))", "decimal(5,2)", Decimal("0.00"), "decimal")
_add("dec_null", "CAST(NULL AS decimal(38,38))", "decimal(38,38)", None, "decimal")
_add(
    "money_min",
    "CAST('-922337203685477.5808' AS money)",
    "money",
    Decimal("-922337203685477.5808"),
    "money",
)
_add(
    "money_max",
    "CAST('922337203685477.5807' AS money)",
    "money",
    Decimal("922337203685477.5807"),
    "money",
)
_add(
    "smallmoney_min",
    "CAST('-214748.3648' AS smallmoney)",
    "smallmoney",
    Decimal("-214748.3648"),
    "money",
)
_add(
    "smallmoney_max",
    "CAST('214748.3647' AS smallmoney)",
    "smallmoney",
    Decimal("214748.3647"),
    "money",
)
_add("money_null", "CAST(NULL AS money)", "money", None, "money")

# --- approximate numerics -------------------------------------------------------------------
_add("real_max", "CAST(3.40282347E+38 AS real)", "real", _real(3.40282347e38), "float")
_add("real_tenth", "CAST(0.1 AS real)", "real", _real(0.1), "float")
_add(
    "float_min",
    "CAST(-1.7976931348623157E+308 AS float)",
    "float",
    -1.7976931348623157e308,
    "float",
)
_add(
    "float_tiny",
    "CAST(2.2250738585072014E-308 AS float)",
    "float",
    2.2250738585072014e-308,
    "float",
)
_add("float_null", "CAST(NULL AS float)", "float", None, "float")

# --- date and time --------------------------------------------------------------------------
_add(
    "datetime_min",
    "CAST('1753-01-01 00:00:00.000' AS datetime)",
    "datetime",
    "1753-01-01 00:00:00.000",
    "datetime",
)
_add(
    "datetime_max",
    "CAST('9999-12-31 23:59:59.997' AS datetime)",
    "datetime",
    "9999-12-31 23:59:59.997",
    "datetime",
)
_add(
    "smalldatetime_min",
    "CAST('1900-01-01 00:00' AS smalldatetime)",
    "smalldatetime",
    "1900-01-01 00:00:00",
    "datetime",
)
_add(
    "smalldatetime_max",
    "CAST('2079-06-06 23:59' AS smalldatetime)",
    "smalldatetime",
    "2079-06-06 23:59:00",
    "datetime",
)
_add("date_min", "CAST('0001-01-01' AS date)", "date", "0001-01-01", "date")
_add("date_max", "CAST('9999-12-31' AS date)", "date", "9999-12-31", "date")
_add("date_null", "CAST(NULL AS date)", "date", None, "date")

_FRACTION = "1234567"
#: 12:34:56.1234567 rounded half up to each scale (SQL Server rounds on conversion)
_ROUNDED = ["", "1", "12", "123", "1235", "12346", "123457", "1234567"]


def _frac(digits: str) -> str:
    return "." + digits if digits else ""


for _s in range(8):
    _add(
        f"time{_s}",
        f"CAST('12:34:56.{_FRACTION}' AS time({_s}))",
        f"time({_s})",
        "12:34:56" + _frac(_ROUNDED[_s]),
        "time",
    )
    _add(
        f"time{_s}_max",
        f"CAST('23:59:59{_frac('9' * _s)}' AS time({_s}))",
        f"time({_s})",
        "23:59:59" + _frac("9" * _s),
        "time",
    )
    _add(
        f"datetime2_{_s}",
        f"CAST('2024-02-29 12:34:56.{_FRACTION}' AS datetime2({_s}))",
        f"datetime2({_s})",
        "2024-02-29 12:34:56" + _frac(_ROUNDED[_s]),
        "datetime2",
    )
    _add(
        f"datetime2_{_s}_max",
        f"CAST('9999-12-31 23:59:59{_frac('9' * _s)}' AS datetime2({_s}))",
        f"datetime2({_s})",
        "9999-12-31 23:59:59" + _frac("9" * _s),
        "datetime2",
    )
    _add(
        f"dto{_s}_neg",
        f"CAST('2024-03-10 01:02:03.{_FRACTION} -03:30' AS datetimeoffset({_s}))",
        f"datetimeoffset({_s})",
        "2024-03-10 01:02:03" + _frac(_ROUNDED[_s]) + " -03:30",
        "datetimeoffset",
    )
    _add(
        f"dto{_s}_pos",
        f"CAST('9999-12-31 23:59:59{_frac('9' * _s)} +14:00' AS datetimeoffset({_s}))",
        f"datetimeoffset({_s})",
        "9999-12-31 23:59:59" + _frac("9" * _s) + " +14:00",
        "datetimeoffset",
    )
_add(
    "datetime2_min",
    "CAST('0001-01-01 00:00:00' AS datetime2(7))",
    "datetime2(7)",
    "0001-01-01 00:00:00.0000000",
    "datetime2",
)
_add("time_null", "CAST(NULL AS time(7))", "time(7)", None, "time")
_add("datetime2_null", "CAST(NULL AS datetime2(7))", "datetime2(7)", None, "datetime2")
_add("dto_null", "CAST(NULL AS datetimeoffset(7))", "datetimeoffset(7)", None, "datetimeoffset")

# --- uniqueidentifier -----------------------------------------------------------------------
_GUID = "6F9619FF-8B86-D011-B42D-00C04FC964FF"
_add("guid", f"CAST('{_GUID}' AS uniqueidentifier)", "uniqueidentifier", uuid.UUID(_GUID), "guid")
_GUID2 = "01234567-89AB-CDEF-0123-456789ABCDEF"
_add(
    "guid_order",
    f"CAST('{_GUID2}' AS uniqueidentifier)",
    "uniqueidentifier",
    uuid.UUID(_GUID2),
    "guid",
)
_add("guid_null", "CAST(NULL AS uniqueidentifier)", "uniqueidentifier", None, "guid")

# --- character data -------------------------------------------------------------------------
_W1252 = "café € œ ß ÿ"
_add("char10", "CAST('abc' AS char(10))", "char(10)", "abc       ", "str")
_add(
    "varchar_1252",
    f"CAST({_n(_W1252)} COLLATE Latin1_General_CI_AS AS varchar(40))",
    "varchar(40) Latin1_General_CI_AS",
    _W1252,
    "str",
)
_add("varchar_empty", "CAST('' AS varchar(10))", "varchar(10)", "", "str")
_CN = "中文字符 \uff21\uff22"  # fullwidth A and B: two bytes each in GBK
_add(
    "varchar_936",
    f"CAST({_n(_CN)} COLLATE Chinese_PRC_CI_AS AS varchar(40))",
    "varchar(40) Chinese_PRC_CI_AS",
    _CN,
    "str",
)
_JP = "日本語ｶﾀｶﾅ"
_add(
    "varchar_932",
    f"CAST({_n(_JP)} COLLATE Japanese_CI_AS AS varchar(40))",
    "varchar(40) Japanese_CI_AS",
    _JP,
    "str",
)
_UTF8 = "é € 中文 😀"
_add(
    "varchar_utf8",
    f"CAST({_n(_UTF8)} COLLATE Latin1_General_100_CI_AS_SC_UTF8 AS varchar(60))",
    "varchar(60) Latin1_General_100_CI_AS_SC_UTF8",
    _UTF8,
    "str",
)
_add("varchar_null", "CAST(NULL AS varchar(10))", "varchar(10)", None, "str")
_SUPP = "𝄞 music 😀 中"
_add("nvarchar_supp", f"CAST({_n(_SUPP)} AS nvarchar(40))", "nvarchar(40)", _SUPP, "str")
_add("nchar10", f"CAST({_n('😀ab')} AS nchar(10))", "nchar(10)", "😀ab" + " " * 6, "str")
_add("nvarchar_empty", "CAST(N'' AS nvarchar(10))", "nvarchar(10)", "", "str")
_add("nvarchar_null", "CAST(NULL AS nvarchar(10))", "nvarchar(10)", None, "str")

# --- binary ---------------------------------------------------------------------------------
_add(
    "binary10",
    "CAST(0x0102 AS binary(10))",
    "binary(10)",
    bytes.fromhex("0102") + bytes(8),
    "bytes",
)
_add(
    "lsn",
    "CONVERT(binary(10), '0x0000002A000001F40003', 1)",
    "binary(10)",
    bytes.fromhex("0000002A000001F40003"),
    "bytes",
)
_add(
    "lsn_zero", "CONVERT(binary(10), '0x00000000000000000000', 1)", "binary(10)", bytes(10), "bytes"
)
_add(
    "varbinary_ff",
    "CAST(0xFF00FF AS varbinary(20))",
    "varbinary(20)",
    bytes.fromhex("FF00FF"),
    "bytes",
)
_add("varbinary_empty", "CONVERT(varbinary(20), '0x', 1)", "varbinary(20)", b"", "bytes")
_add("varbinary_null", "CAST(NULL AS varbinary(20))", "varbinary(20)", None, "bytes")

# --- (max) types: 0 bytes, 1 byte, 100 KB (PLP) ---------------------------------------------
_BIG_TEXT = ("0123456789abcdef" * 6400)[:102400]
_BIG_NTEXT = ("ab😀" * 12800)[: 12800 * 3]  # 51200 UTF-16 code units = 100 KB on the wire
_BIG_BYTES = bytes(range(256)) * 400
_add("varchar_max_0", "CAST('' AS varchar(max))", "varchar(max)", "", "str")
_add("varchar_max_1", "CAST('x' AS varchar(max))", "varchar(max)", "x", "str")
_add("varchar_max_100k", f"CAST('{_BIG_TEXT}' AS varchar(max))", "varchar(max)", _BIG_TEXT, "str")
_add("varchar_max_null", "CAST(NULL AS varchar(max))", "varchar(max)", None, "str")
_add("nvarchar_max_0", "CAST(N'' AS nvarchar(max))", "nvarchar(max)", "", "str")
_add("nvarchar_max_1", "CAST(N'y' AS nvarchar(max))", "nvarchar(max)", "y", "str")
_add(
    "nvarchar_max_100k",
    f"CAST({_n(_BIG_NTEXT)} AS nvarchar(max))",
    "nvarchar(max)",
    _BIG_NTEXT,
    "str",
)
_add("nvarchar_max_null", "CAST(NULL AS nvarchar(max))", "nvarchar(max)", None, "str")
_add("varbinary_max_0", "CONVERT(varbinary(max), '0x', 1)", "varbinary(max)", b"", "bytes")
_add("varbinary_max_1", "CAST(0x7F AS varbinary(max))", "varbinary(max)", b"\x7f", "bytes")
_add(
    "varbinary_max_100k",
    f"CAST(0x{_BIG_BYTES.hex().upper()} AS varbinary(max))",
    "varbinary(max)",
    _BIG_BYTES,
    "bytes",
)
_add("varbinary_max_null", "CAST(NULL AS varbinary(max))", "varbinary(max)", None, "bytes")

# --- xml, text/ntext/image ------------------------------------------------------------------
_XML = '<a b="1">é😀<c /></a>'
_add("xml", f"CAST({_n(_XML)} AS xml)", "xml", _XML, "xml")
_add("xml_null", "CAST(NULL AS xml)", "xml", None, "xml")
_add("text", "CAST('text é' AS text)", "text", "text é", "str")
_add("ntext", f"CAST({_n('ntext 😀')} AS ntext)", "ntext", "ntext 😀", "str")
_add("image", "CAST(0x01FF AS image)", "image", b"\x01\xff", "bytes")
_add("text_null", "CAST(NULL AS text)", "text", None, "str")

# --- sql_variant ----------------------------------------------------------------------------
_add("variant_int", "CAST(CAST(123 AS int) AS sql_variant)", "sql_variant", 123, "variant", "int")
_add(
    "variant_bigint",
    "CAST(CAST(-5000000000 AS bigint) AS sql_variant)",
    "sql_variant",
    -5000000000,
    "variant",
    "bigint",
)
_add(
    "variant_decimal",
    "CAST(CAST('1234.567' AS decimal(10,3)) AS sql_variant)",
    "sql_variant",
    Decimal("1234.567"),
    "variant",
    "decimal(10,3)",
)
_add(
    "variant_nvarchar",
    f"CAST(CAST({_n('vär😀')} AS nvarchar(20)) AS sql_variant)",
    "sql_variant",
    "vär😀",
    "variant",
    "nvarchar(20)",
)
_add(
    "variant_varchar",
    "CAST(CAST('abc' AS varchar(10)) AS sql_variant)",
    "sql_variant",
    "abc",
    "variant",
    "varchar(10)",
)
_add(
    "variant_datetime2",
    "CAST(CAST('2024-01-02 03:04:05.678' AS datetime2(3)) AS sql_variant)",
    "sql_variant",
    "2024-01-02 03:04:05.678",
    "variant",
    "datetime2(3)",
)
_add(
    "variant_varbinary",
    "CAST(CAST(0xDEAD AS varbinary(10)) AS sql_variant)",
    "sql_variant",
    b"\xde\xad",
    "variant",
    "varbinary(10)",
)
_add("variant_null", "CAST(NULL AS sql_variant)", "sql_variant", None, "variant")

# --- rowversion -----------------------------------------------------------------------------
_add(
    "rowversion",
    "CAST(0x00000000000007D1 AS rowversion)",
    "timestamp",
    bytes.fromhex("00000000000007D1"),
    "rowversion",
)

COLUMNS: tuple[GoldenColumn, ...] = tuple(_C)
GOLDEN_SQL = "SELECT " + ",\n       ".join(f"{c.expr} AS [{c.name}]" for c in COLUMNS)


def by_name(name: str) -> GoldenColumn:
    for col in COLUMNS:
        if col.name == name:
            return col
    raise KeyError(name)


def truncate_fraction(text: str, digits: int) -> str:
    """Canonical date/time text with its fraction cut (not rounded) to ``digits`` digits."""
    head, dot, rest = text.partition(".")
    if not dot:
        return text
    frac = "".join(ch for ch in rest if ch.isdigit())
    tail = rest[len(frac) :]
    frac = frac[:digits]
    return head + ("." + frac if frac else "") + tail


def _micros(frac: str) -> int:
    return int((frac + "000000")[:6]) if frac else 0


def python_value(col: GoldenColumn, value: object = None) -> object:
    """The expected value as Python drivers return it: date/time text becomes ``datetime``,
    ``date`` or ``time`` with the fraction truncated to microseconds."""
    text = col.value if value is None else value
    if text is None or not isinstance(text, str):
        return text
    kind = col.kind if col.kind != "variant" else col.base_type.split("(")[0]
    if kind == "date":
        return dt.date.fromisoformat(text)
    if kind == "time":
        hms, _, frac = text.partition(".")
        h, m, s = (int(p) for p in hms.split(":"))
        return dt.time(h, m, s, _micros(frac))
    if kind in ("datetime", "datetime2", "smalldatetime"):
        date, _, clock = text.partition(" ")
        hms, _, frac = clock.partition(".")
        h, m, s = (int(p) for p in hms.split(":"))
        return dt.datetime.combine(dt.date.fromisoformat(date), dt.time(h, m, s, _micros(frac)))
    if kind == "datetimeoffset":
        local, _, offset = text.rpartition(" ")
        naive = python_value(GoldenColumn("", "", "", local, "datetime2"))
        assert isinstance(naive, dt.datetime)
        sign = -1 if offset[0] == "-" else 1
        hours, minutes = (int(p) for p in offset[1:].split(":"))
        tz = dt.timezone(sign * dt.timedelta(hours=hours, minutes=minutes))
        return naive.replace(tzinfo=tz)
    return text


def utf8_downgraded(text: str) -> str:
    """What a client without UTF8_SUPPORT reads from a UTF-8 collation column: SQL Server
    sends the closest non-UTF-8 collation (KB5016780), here code page 1252, and every UTF-16
    code unit it cannot hold becomes ``?``."""
    out = []
    for ch in text:
        try:
            out.append(ch.encode("cp1252").decode("cp1252"))
        except UnicodeEncodeError:
            out.append("??" if ord(ch) > 0xFFFF else "?")
    return "".join(out)


def mismatches(
    actual: dict[str, object], expected: dict[str, object], skip: dict[str, str]
) -> list[str]:
    """Lines describing every column whose value differs; ``skip`` maps a column the driver
    cannot read to the reason (those columns are left out on purpose)."""
    out = []
    for col in COLUMNS:
        if col.name in skip:
            continue
        got, want = actual.get(col.name, "<missing>"), expected[col.name]
        same = got == want and type(got) is type(want)
        if isinstance(want, float) and isinstance(got, float):
            same = got == want or (math.isnan(got) and math.isnan(want))
        if not same:
            out.append(f"{col.name} ({col.sql_type}): got {got!r:.120} want {want!r:.120}")
    return out
