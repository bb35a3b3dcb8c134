"""SQL Server data types: TYPE_INFO, value encoding and decoding, engine storage mapping.

Wire formats follow MS-TDS 2.2.5.4 (data type definitions), 2.2.5.5.1 (fixed and variable
length values, PLP in 2.2.5.2.3) and the date/time page 2.2.5.5.1.8. What SQL Server does and
this module copies:

* a NOT NULL column of a fixed-length type goes out as the fixed type (INT4 0x38, FLT8 0x3E,
  ...); a nullable one as the N type (INTN 0x26 with a length byte);
* ``money`` is the high 32 bits then the low 32 bits of the scaled int64 (2.2.5.5.1.4);
* ``decimal`` is a sign byte (1 = positive) and a 4/8/12/16-byte magnitude (2.2.5.5.1.6);
* ``uniqueidentifier`` is mixed-endian, i.e. ``uuid.UUID.bytes_le``;
* ``(max)`` types and ``xml`` are PLP: u64 total length, u32-length chunks, a 0-length end;
* ``timestamp``/``rowversion`` is BIGBINARY(8) with UserType 80;
* ``char``/``varchar``/``text`` carry the 5-byte collation of their column (2.2.5.1.2) and are
  sent in its code page, or UTF-8 for a UTF-8 collation (see :mod:`collations`);
* ``text``/``ntext``/``image`` are the long types of 2.2.5.4.3: a LONGLEN maximum, the
  collation, the table name as parts, and per value a text pointer, a timestamp and the data;
* ``sql_variant`` (2.2.5.5.4) is a u32 length, the base type id, a property byte count, the
  base type's properties (precision/scale, scale, collation and maximum length) and the value;
* ``hierarchyid``, ``geography`` and ``geometry`` are CLR UDTs (UDT_INFO, 2.2.5.5.6: maximum
  size, database, schema, type and assembly-qualified names) with PLP values in the types' own
  serialization (:mod:`clr`).
"""

from __future__ import annotations

import datetime as dt
import json
import re
import struct
import uuid
from contextvars import ContextVar
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation, localcontext

from sqlglot import exp

from mssql_cdc.emulator.protocol.clr import CLR_TYPES, UDT_NAMES, hierarchyid_bytes, spatial_bytes
from mssql_cdc.emulator.protocol.collations import DEFAULT as DEFAULT_COLLATION
from mssql_cdc.emulator.protocol.collations import Collation, codec_of, lookup
from mssql_cdc.emulator.protocol.temporal import Temporal, parse_temporal
from mssql_cdc.emulator.protocol.wire import (
    ProtocolError,
    Reader,
    b_varchar,
    decode_utf16,
    us_varchar,
)

__all__ = [
    "CLIENT_UTF8",
    "COLLATION_CP1252",
    "MAX",
    "SqlType",
    "data_length",
    "decode_param",
    "encode_value",
    "fixed_data_length",
    "from_datatype",
    "infer_from_engine",
    "normalize_type_names",
    "pack_variant",
    "type_info",
    "unpack_variant",
]

MAX = -1
#: Whether the client of the current session announced UTF8_SUPPORT (LOGIN7 FeatureExt 0x0A,
#: MS-TDS 2.2.6.4). The session sets it once after login (each connection is its own asyncio
#: task, so the value is per connection); encoders read it unless told explicitly.
CLIENT_UTF8: ContextVar[bool] = ContextVar("CLIENT_UTF8", default=True)
#: SQL_Latin1_General_CP1_CI_AS: LCID 0x0409, IgnoreCase|IgnoreWidth|IgnoreKana, sort id 52.
COLLATION_CP1252 = DEFAULT_COLLATION.wire()
#: ``ntext`` parses like ``text`` in sqlglot's T-SQL dialect; :func:`normalize_type_names`
#: rewrites it to ``nvarchar`` of this impossible length (nvarchar(n) stops at 4000) first.
NTEXT_SENTINEL = 1073741823
_NTEXT = re.compile(r"(?<![\[\"'.@])\bntext\b(?![\]\"'])", re.IGNORECASE)
PLP_NULL = 0xFFFFFFFFFFFFFFFF
#: the database UDT_INFO names for the CLR system types (they live in every database's sys
#: schema; the emulator names master)
UDT_DATABASE = "master"
PLP_CHUNK = 8000

_INT_SIZES = {"tinyint": 1, "smallint": 2, "int": 4, "bigint": 8}
_INT_FIXED = {1: 0x30, 2: 0x34, 4: 0x38, 8: 0x7F}
_CHAR_IDS = {"char": 0xAF, "varchar": 0xA7, "nchar": 0xEF, "nvarchar": 0xE7}
_BIN_IDS = {"binary": 0xAD, "varbinary": 0xA5, "rowversion": 0xAD}
#: text/ntext/image: type id and the LONGLEN maximum SQL Server sends (2.2.5.4.3).
_LONG = {"text": (0x23, 0x7FFFFFFF), "ntext": (0x63, 0x7FFFFFFE), "image": (0x22, 0x7FFFFFFF)}
#: sql_variant's TYPE_INFO maximum length (2.2.5.5.4): 8000 bytes of value plus 16 of header.
VARIANT_MAX = 8016
_POW10 = [1, 10, 100, 1000, 10_000, 100_000, 1_000_000, 10_000_000]
_TEMPORAL = {"date", "time", "datetime2", "datetimeoffset", "datetime", "smalldatetime"}


@dataclass(frozen=True)
class SqlType:
    """A SQL Server column type. ``length`` is characters or bytes; ``MAX`` (-1) for (max)."""

    name: str
    length: int = 0
    precision: int = 0
    scale: int = 0
    #: the COLLATE name of a character type; "" is the database default
    collation: str = ""

    @property
    def coll(self) -> Collation:
        """The collation of a character type (the database default unless declared)."""
        return lookup(self.collation) if self.collation else DEFAULT_COLLATION

    @property
    def is_max(self) -> bool:
        return self.length == MAX or self.name == "xml"

    @property
    def is_long(self) -> bool:
        """text, ntext or image (the pre-2005 long types)."""
        return self.name in _LONG

    @property
    def is_temporal(self) -> bool:
        return self.name in _TEMPORAL

    @property
    def is_string(self) -> bool:
        return self.name in _CHAR_IDS or self.name in ("xml", "text", "ntext")

    @property
    def is_binary(self) -> bool:
        return self.name in _BIN_IDS or self.name == "image"

    @property
    def is_decimal(self) -> bool:
        """decimal, numeric, money or smallmoney: exact numerics with a scale."""
        return self.name in ("decimal", "numeric", "money", "smallmoney")

    def sql(self) -> str:
        """The type as T-SQL spells it (``nvarchar(max)``, ``decimal(38,0)``, ``time(7)``)."""
        if self.name in _CHAR_IDS or self.name in ("binary", "varbinary"):
            return f"{self.name}({'max' if self.length == MAX else self.length})"
        if self.name in ("decimal", "numeric"):
            return f"{self.name}({self.precision},{self.scale})"
        if self.name in ("time", "datetime2", "datetimeoffset"):
            return f"{self.name}({self.scale})"
        return self.name

    def storage(self) -> str:
        """The DuckDB column type that holds values of this type."""
        if self.name in _INT_SIZES:
            return {1: "UTINYINT", 2: "SMALLINT", 4: "INTEGER", 8: "BIGINT"}[_INT_SIZES[self.name]]
        simple = {
            "bit": "BOOLEAN",
            "money": "DECIMAL(19,4)",
            "smallmoney": "DECIMAL(10,4)",
            "real": "FLOAT",
            "float": "DOUBLE",
            "uniqueidentifier": "UUID",
        }
        if self.name in simple:
            return simple[self.name]
        if self.name in ("decimal", "numeric"):
            return f"DECIMAL({self.precision},{self.scale})"
        if self.is_binary:
            return "BLOB"
        return "VARCHAR"  # strings, xml, and temporal values as canonical text

    def max_bytes(self) -> int:
        if self.name in ("nchar", "nvarchar", "ntext"):
            return self.length * 2
        return self.length


def scalar(name: str, length: int = 0, precision: int = 0, scale: int = 0) -> SqlType:
    return SqlType(name, length, precision, scale)


def _params(datatype: exp.DataType) -> list[str]:
    out = []
    for param in datatype.expressions:
        node = param.this if isinstance(param, exp.DataTypeParam) else param
        out.append(str(node.name if isinstance(node, (exp.Var, exp.Identifier)) else node))
    return out


def _length(values: list[str], default: int) -> int:
    if not values:
        return default
    return MAX if values[0].upper() == "MAX" else int(values[0])


def from_datatype(datatype: exp.DataType, *, in_cast: bool = False) -> SqlType:  # noqa: PLR0911, PLR0912 (a dispatch over kinds)
    """Map a sqlglot T-SQL ``DataType`` to :class:`SqlType`.

    ``in_cast`` selects the CAST/CONVERT default length of 30 for unsized character types
    ("char and varchar (Transact-SQL)"), instead of the declaration default of 1.
    """
    kind = datatype.this
    t = exp.DataType.Type
    params = _params(datatype)
    default_len = 30 if in_cast else 1
    ints = {
        t.TINYINT: "tinyint",
        t.UTINYINT: "tinyint",
        t.SMALLINT: "smallint",
        t.INT: "int",
        t.BIGINT: "bigint",
    }
    if kind in ints:
        return scalar(ints[kind])
    if kind in (t.BIT, t.BOOLEAN):
        return scalar("bit")
    if kind in (t.DECIMAL, t.BIGDECIMAL):
        precision = int(params[0]) if params else 18
        scale = int(params[1]) if len(params) > 1 else 0
        return scalar("decimal", precision=precision, scale=scale)
    if kind == t.MONEY:
        return scalar("money", precision=19, scale=4)
    if kind == t.SMALLMONEY:
        return scalar("smallmoney", precision=10, scale=4)
    if kind == t.FLOAT:
        return scalar("real") if params and int(params[0]) <= 24 else scalar("float")
    if kind == t.DOUBLE:
        return scalar("float")
    if kind == t.DATE:
        return scalar("date")
    scale = int(params[0]) if params and params[0].isdigit() else 7
    if kind == t.TIME:
        return scalar("time", scale=scale)
    if kind == t.DATETIME2:
        return scalar("datetime2", scale=scale)
    if kind == t.TIMESTAMPTZ:
        return scalar("datetimeoffset", scale=scale)
    if kind == t.DATETIME:
        return scalar("datetime")
    if kind == t.SMALLDATETIME:
        return scalar("smalldatetime")
    if kind == t.UUID:
        return scalar("uniqueidentifier")
    strings = {t.CHAR: "char", t.VARCHAR: "varchar", t.NCHAR: "nchar", t.NVARCHAR: "nvarchar"}
    if kind in strings:
        length = _length(params, default_len)
        if kind == t.NVARCHAR and length == NTEXT_SENTINEL:
            return scalar("ntext", length=MAX)
        return scalar(strings[kind], length=length)
    if kind == t.TEXT:
        return scalar("text", length=MAX)
    if kind == t.VARIANT:
        return scalar("sql_variant", length=VARIANT_MAX)
    if kind == t.BINARY:
        return scalar("binary", length=_length(params, default_len))
    if kind == t.VARBINARY:
        return scalar("varbinary", length=_length(params, default_len))
    if kind == t.IMAGE:
        return scalar("image", length=MAX)
    if kind == t.XML:
        return scalar("xml", length=MAX)
    if kind == t.ROWVERSION:
        return scalar("rowversion", length=8)
    if kind == t.GEOGRAPHY:
        return scalar("geography", length=MAX)
    if kind == t.GEOMETRY:
        return scalar("geometry", length=MAX)
    if kind == t.USERDEFINED and str(datatype.args.get("kind", "")).lower() == "hierarchyid":
        return scalar("hierarchyid", length=892)
    raise ValueError(f"unsupported data type {datatype.sql(dialect='tsql')}")


def normalize_type_names(sql: str) -> str:
    """Spell ``ntext`` so that it survives sqlglot's T-SQL parser (which reads it as ``text``)."""
    return _NTEXT.sub(f"nvarchar({NTEXT_SENTINEL})", sql)


def infer_from_engine(engine_type: str, values: list[object]) -> SqlType:  # noqa: PLR0911 (a dispatch over kinds)
    """The SQL Server type of an engine result column that has no declared type."""
    name = engine_type.upper()
    simple = {
        "UTINYINT": "tinyint",
        "TINYINT": "smallint",
        "SMALLINT": "smallint",
        "USMALLINT": "int",
        "INTEGER": "int",
        "UINTEGER": "bigint",
        "BIGINT": "bigint",
        "BOOLEAN": "bit",
        "FLOAT": "real",
        "DOUBLE": "float",
        "DATE": "date",
        "UUID": "uniqueidentifier",
    }
    if name in simple:
        return scalar(simple[name])
    if name in ("HUGEINT", "UBIGINT", "UHUGEINT"):
        return scalar("decimal", precision=38, scale=0)
    if name.startswith("DECIMAL"):
        precision, scale = (int(p) for p in name[8:-1].split(","))
        return scalar("decimal", precision=precision, scale=scale)
    if name.startswith("TIMESTAMP"):
        return scalar("datetime2", scale=7)
    if name.startswith("TIME"):
        return scalar("time", scale=7)
    if name == "BLOB":
        longest = max((len(v) for v in values if isinstance(v, bytes)), default=1)
        return scalar("varbinary", length=MAX if longest > 8000 else 8000)
    longest = max((len(str(v)) for v in values if v is not None), default=1)
    return scalar("nvarchar", length=MAX if longest > 4000 else 4000)


# ---------------------------------------------------------------------------------------------
# TYPE_INFO (MS-TDS 2.2.5.6)


def wire_collation(t: SqlType, *, utf8: bool | None = None) -> Collation:
    """The collation a character column is sent with: a UTF-8 collation becomes its closest
    non-UTF-8 one for a client that did not announce UTF8_SUPPORT (KB5016780)."""
    coll = t.coll
    if utf8 is None:
        utf8 = CLIENT_UTF8.get()
    return coll if utf8 else coll.without_utf8()


def type_info(t: SqlType, *, nullable: bool = True, utf8: bool | None = None) -> bytes:  # noqa: PLR0911, PLR0912 (a dispatch over kinds)
    """TYPE_INFO bytes of a column: type id plus its length/precision/collation fields.

    ``utf8`` says whether the client announced UTF8_SUPPORT (FeatureExt 0x0A, 2.2.6.4).
    """
    name = t.name
    if name in _INT_SIZES:
        size = _INT_SIZES[name]
        return bytes([0x26, size]) if nullable else bytes([_INT_FIXED[size]])
    if name == "bit":
        return b"\x68\x01" if nullable else b"\x32"
    if name in ("real", "float"):
        size = 4 if name == "real" else 8
        if nullable:
            return bytes([0x6D, size])
        return bytes([0x3B if size == 4 else 0x3E])
    if name in ("money", "smallmoney"):
        size = 8 if name == "money" else 4
        if nullable:
            return bytes([0x6E, size])
        return bytes([0x3C if size == 8 else 0x7A])
    if name in ("datetime", "smalldatetime"):
        size = 8 if name == "datetime" else 4
        if nullable:
            return bytes([0x6F, size])
        return bytes([0x3D if size == 8 else 0x3A])
    if name in ("decimal", "numeric"):
        tid = 0x6A if name == "decimal" else 0x6C
        return bytes([tid, _decimal_size(t.precision), t.precision, t.scale])
    if name == "date":
        return b"\x28"
    if name in ("time", "datetime2", "datetimeoffset"):
        tid = {"time": 0x29, "datetime2": 0x2A, "datetimeoffset": 0x2B}[name]
        return bytes([tid, t.scale])
    if name == "uniqueidentifier":
        return b"\x24\x10"
    if name in _CHAR_IDS:
        maxlen = 0xFFFF if t.length == MAX else t.max_bytes()
        collation = wire_collation(t, utf8=utf8).wire()
        return bytes([_CHAR_IDS[name]]) + struct.pack("<H", maxlen) + collation
    if name in _BIN_IDS:
        maxlen = 0xFFFF if t.length == MAX else t.length
        return bytes([_BIN_IDS[name]]) + struct.pack("<H", maxlen)
    if name in _LONG:
        tid, maxlen = _LONG[name]
        out = bytes([tid]) + struct.pack("<I", maxlen)
        if name != "image":
            out += wire_collation(t, utf8=utf8).wire()
        # TableName: NumParts then US_VARCHAR parts. Clients require 1-4 parts (mssql-jdbc
        # rejects 0), so an expression without a base table sends one empty part.
        return out + b"\x01\x00\x00"
    if name == "xml":
        return b"\xf1\x00"  # no schema collection
    if name == "sql_variant":
        return b"\x62" + struct.pack("<I", VARIANT_MAX)
    if name in CLR_TYPES:
        max_size, assembly = UDT_NAMES[name]
        return (
            b"\xf0"
            + struct.pack("<H", max_size)
            + b_varchar(UDT_DATABASE)
            + b_varchar("sys")
            + b_varchar(name)
            + us_varchar(assembly)
        )
    raise ValueError(f"no TYPE_INFO for {t.sql()}")


def user_type(t: SqlType) -> int:
    """COLMETADATA UserType: 80 marks timestamp/rowversion (FreeTDS TDS_UT_TIMESTAMP)."""
    return 80 if t.name == "rowversion" else 0


def _decimal_size(precision: int) -> int:
    if precision <= 9:
        return 5
    if precision <= 19:
        return 9
    if precision <= 28:
        return 13
    return 17


def _time_size(scale: int) -> int:
    if scale <= 2:
        return 3
    if scale <= 4:
        return 4
    return 5


_STORAGE_SIZES = {
    "bit": 1,
    "real": 4,
    "float": 8,
    "smallmoney": 4,
    "money": 8,
    "smalldatetime": 4,
    "datetime": 8,
    "date": 3,
    "uniqueidentifier": 16,
    "rowversion": 8,
}


def fixed_data_length(t: SqlType) -> int | None:  # noqa: PLR0911 (a dispatch over kinds)
    """``DATALENGTH`` of every non-NULL value of ``t`` when it is the same for all (numbers,
    date/time, ``char(n)``/``nchar(n)``/``binary(n)``), else ``None``."""
    if t.name in _INT_SIZES:
        return _INT_SIZES[t.name]
    if t.name in _STORAGE_SIZES:
        return _STORAGE_SIZES[t.name]
    if t.name in ("decimal", "numeric"):
        return _decimal_size(t.precision)
    if t.name == "time":
        return _time_size(t.scale)
    if t.name == "datetime2":
        return _time_size(t.scale) + 3
    if t.name == "datetimeoffset":
        return _time_size(t.scale) + 5
    if t.name in ("char", "nchar", "binary") and t.length != MAX:
        return t.max_bytes()
    return None


def data_length(t: SqlType, value: object) -> int | None:
    """``DATALENGTH(value)`` for a value of type ``t``: the bytes SQL Server stores, i.e. UTF-16
    code units times two for the N types, bytes in the collation's code page (or UTF-8) for
    the others, the storage size for fixed-length types ("DATALENGTH (Transact-SQL)")."""
    if value is None:
        return None
    fixed = fixed_data_length(t)
    if fixed is not None:
        return fixed
    if t.is_string:
        return len(_text_bytes(t, value, utf8=True))
    if t.is_binary:
        return len(as_bytes(value))
    raise ValueError(f"DATALENGTH of {t.sql()}")


# ---------------------------------------------------------------------------------------------
# values


def as_int(value: object) -> int:
    if isinstance(value, (int, str, float, Decimal)):
        return int(value)
    raise ValueError(f"not a number: {type(value).__name__}")


def as_float(value: object) -> float:
    if isinstance(value, (int, str, float, Decimal)):
        return float(value)
    raise ValueError(f"not a number: {type(value).__name__}")


def as_bytes(value: object) -> bytes:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        return value.encode("cp1252", errors="replace")
    raise ValueError(f"not binary: {type(value).__name__}")


def _to_decimal(value: object, scale: int) -> int:
    try:
        with localcontext() as ctx:
            ctx.prec = 80
            number = value if isinstance(value, Decimal) else Decimal(str(value))
            scaled = number.scaleb(scale).to_integral_value(rounding=ROUND_HALF_UP)
    except InvalidOperation as exc:
        raise ValueError(f"cannot convert {value!r} to a number") from exc
    return int(scaled)


def _plp(data: bytes) -> bytes:
    """A PLP value (2.2.5.2.3): u64 total length, u32-length chunks, a zero-length end."""
    parts = [struct.pack("<Q", len(data))]
    for start in range(0, len(data), PLP_CHUNK):
        chunk = data[start : start + PLP_CHUNK]
        parts.append(struct.pack("<I", len(chunk)))
        parts.append(chunk)
    parts.append(b"\x00\x00\x00\x00")
    return b"".join(parts)


def _text_bytes(t: SqlType, value: object, *, utf8: bool | None = None) -> bytes:
    """Character data as it travels: UTF-16LE for the N types and xml, else the code page of
    the column's collation (UTF-8 for a UTF-8 collation). ``char(n)``/``nchar(n)`` are padded
    with spaces to n bytes / n UTF-16 code units, after conversion."""
    text = value if isinstance(value, str) else str(value)
    if t.name in ("nchar", "nvarchar", "ntext", "xml"):
        data = text.encode("utf-16-le", errors="surrogatepass")
        pad = "\x20".encode("utf-16-le")
    else:
        data = wire_collation(t, utf8=utf8).encode(text)
        pad = b"\x20"
    if t.name in ("char", "nchar") and t.length != MAX:
        width = t.max_bytes()
        data = data[:width]
        data += pad * ((width - len(data)) // len(pad))
    return data


def _temporal_bytes(t: SqlType, value: object) -> bytes:
    tv = parse_temporal(value)
    name = t.name
    if name == "date":
        return (tv.days or 0).to_bytes(3, "little")
    if name == "datetime":
        days, ticks = tv.round_datetime().datetime_parts()
        return struct.pack("<iI", days, ticks)
    if name == "smalldatetime":
        rounded = tv.round_ticks(0)
        days = (rounded.days or 0) - (dt.date(1900, 1, 1).toordinal() - 1)
        minutes = ((rounded.ticks or 0) // 10_000_000 + 30) // 60
        return struct.pack("<HH", days, minutes)
    scale = t.scale
    rounded = tv.round_ticks(scale).utc() if name == "datetimeoffset" else tv.round_ticks(scale)
    units = (rounded.ticks or 0) // _POW10[7 - scale]
    time_part = units.to_bytes(_time_size(scale), "little")
    if name == "time":
        return time_part
    date_part = (rounded.days or 0).to_bytes(3, "little")
    if name == "datetime2":
        return time_part + date_part
    return time_part + date_part + struct.pack("<h", tv.offset or 0)


_FIXED_NAMES = frozenset(
    [*_INT_SIZES, "bit", "real", "float", "money", "smallmoney", "datetime", "smalldatetime"]
)
#: fixed-length type ids (2.2.5.4.1), as sql_variant names its base type
_FIXED_TYPE_IDS = {
    "tinyint": 0x30,
    "smallint": 0x34,
    "int": 0x38,
    "bigint": 0x7F,
    "bit": 0x32,
    "real": 0x3B,
    "float": 0x3E,
    "money": 0x3C,
    "smallmoney": 0x7A,
    "datetime": 0x3D,
    "smalldatetime": 0x3A,
}


def _fixed_bytes(t: SqlType, value: object) -> bytes:  # noqa: PLR0911 (a dispatch over kinds)
    """The value bytes of a fixed-length type, without a length prefix."""
    name = t.name
    if name in _INT_SIZES:
        size = _INT_SIZES[name]
        number = as_int(value)
        return number.to_bytes(size, "little", signed=name != "tinyint")
    if name == "bit":
        return b"\x01" if value else b"\x00"
    if name == "real":
        return struct.pack("<f", as_float(value))
    if name == "float":
        return struct.pack("<d", as_float(value))
    if name == "money":
        scaled = _to_decimal(value, 4)
        return struct.pack("<iI", scaled >> 32, scaled & 0xFFFFFFFF)
    if name == "smallmoney":
        return struct.pack("<i", _to_decimal(value, 4))
    if name in ("datetime", "smalldatetime"):
        return _temporal_bytes(t, value)
    raise ValueError(f"{t.sql()} is not a fixed-length type")


def _decimal_bytes(t: SqlType, value: object) -> bytes:
    """Sign byte (1 = positive) and the magnitude in 4/8/12/16 bytes (2.2.5.5.1.6)."""
    scaled = _to_decimal(value, t.scale)
    if abs(scaled) >= 10**t.precision:
        raise ValueError(f"{value!r} does not fit {t.sql()}")
    size = _decimal_size(t.precision)
    return bytes([1 if scaled >= 0 else 0]) + abs(scaled).to_bytes(size - 1, "little")


def _long_bytes(t: SqlType, value: object, *, utf8: bool | None = None) -> bytes:
    """text/ntext/image (2.2.7.17 ROW, TEXTPTR form): text pointer length 16, a text pointer,
    an 8-byte timestamp, the u32 data length and the data; NULL is a zero pointer length."""
    if value is None:
        return b"\x00"
    data = as_bytes(value) if t.name == "image" else _text_bytes(t, value, utf8=utf8)
    return b"\x10" + _TEXT_POINTER + _TEXT_TIMESTAMP + struct.pack("<I", len(data)) + data


_TEXT_POINTER = bytes(range(1, 17))
_TEXT_TIMESTAMP = bytes(8)


def _rowversion(value: object) -> bytes:
    if isinstance(value, int):
        return value.to_bytes(8, "big")
    return as_bytes(value)[:8].rjust(8, b"\x00")


def encode_value(  # noqa: PLR0911, PLR0912 (a dispatch over kinds)
    t: SqlType, value: object, *, nullable: bool = True, utf8: bool | None = None
) -> bytes:
    """The bytes of one value in a ROW token (or a RETURNVALUE), NULL included."""
    name = t.name
    if name in _FIXED_NAMES:
        if value is None:
            if not nullable:
                raise ValueError("NULL in a NOT NULL column")
            return b"\x00"
        data = _fixed_bytes(t, value)
        return bytes([len(data)]) + data if nullable else data
    if name in ("decimal", "numeric"):
        if value is None:
            return b"\x00"
        data = _decimal_bytes(t, value)
        return bytes([len(data)]) + data
    if name in ("date", "time", "datetime2", "datetimeoffset"):
        if value is None:
            return b"\x00"
        data = _temporal_bytes(t, value)
        return bytes([len(data)]) + data
    if name == "uniqueidentifier":
        if value is None:
            return b"\x00"
        guid = value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))
        return b"\x10" + guid.bytes_le
    if t.is_long:
        return _long_bytes(t, value, utf8=utf8)
    if name == "sql_variant":
        if value is None:
            return b"\x00\x00\x00\x00"
        base, inner = unpack_variant(value)
        data = _variant_bytes(base, inner)
        return struct.pack("<I", len(data)) + data
    if name == "rowversion":
        if value is None:
            return b"\xff\xff"
        return b"\x08\x00" + _rowversion(value)
    if name in CLR_TYPES:
        if value is None:
            return struct.pack("<Q", PLP_NULL)
        if name == "hierarchyid":
            return _plp(hierarchyid_bytes(str(value)))
        return _plp(spatial_bytes(str(value), geography=name == "geography"))
    if t.is_string or t.is_binary:
        if t.is_max:
            if value is None:
                return struct.pack("<Q", PLP_NULL)
            data = as_bytes(value) if t.is_binary else _text_bytes(t, value, utf8=utf8)
            return _plp(data)
        if value is None:
            return b"\xff\xff"
        if t.is_binary:
            data = as_bytes(value)
            if name == "binary":
                data = data[: t.length].ljust(t.length, b"\x00")
        else:
            data = _text_bytes(t, value, utf8=utf8)
        return struct.pack("<H", len(data)) + data
    raise ValueError(f"cannot encode {t.sql()}")


# ---------------------------------------------------------------------------------------------
# sql_variant (MS-TDS 2.2.5.5.4)
#
# The engine holds a sql_variant as text: JSON with the base type and the value in the
# storage form of that type (numbers and date/time values as canonical text, binary as hex).


def pack_variant(base: SqlType, value: object) -> str:
    """The storage text of a sql_variant holding ``value`` (storage form) of type ``base``."""
    if base.name in ("sql_variant", "xml", "text", "ntext", "image", "rowversion") or base.is_max:
        raise ValueError(f"{base.sql()} cannot be stored in a sql_variant")
    if isinstance(value, (bytes, bytearray, memoryview)):
        text = bytes(value).hex()
    elif isinstance(value, bool):
        text = "1" if value else "0"
    elif isinstance(value, float):
        text = repr(value)
    else:
        text = str(value)
    fields = {
        "t": base.name,
        "l": base.length,
        "p": base.precision,
        "s": base.scale,
        "c": base.collation,
        "v": text,
    }
    return json.dumps(fields, ensure_ascii=False, separators=(",", ":"))


def unpack_variant(stored: object) -> tuple[SqlType, object]:
    """(base type, value) of a sql_variant's storage text."""
    if isinstance(stored, tuple) and len(stored) == 2 and isinstance(stored[0], SqlType):
        return stored[0], stored[1]
    try:
        fields = json.loads(str(stored))
        base = SqlType(fields["t"], fields["l"], fields["p"], fields["s"], fields["c"])
        text = str(fields["v"])
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"not a sql_variant value: {stored!r}") from exc
    value: object = text
    if base.is_binary:
        value = bytes.fromhex(text)
    elif base.name in _INT_SIZES:
        value = int(text)
    elif base.name == "bit":
        value = text == "1"
    elif base.name in ("real", "float"):
        value = float(text)
    elif base.is_decimal:
        value = Decimal(text)
    elif base.name == "uniqueidentifier":
        value = uuid.UUID(text)
    return base, value


def _variant_bytes(base: SqlType, value: object) -> bytes:
    """Base type id, property count, properties and value of a sql_variant (no length)."""
    name = base.name
    props = b""
    if name in _FIXED_TYPE_IDS:
        tid = _FIXED_TYPE_IDS[name]
        data = _fixed_bytes(base, value)
    elif name == "uniqueidentifier":
        tid = 0x24
        guid = value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))
        data = guid.bytes_le
    elif name == "date":
        tid, data = 0x28, _temporal_bytes(base, value)
    elif name in ("time", "datetime2", "datetimeoffset"):
        tid = {"time": 0x29, "datetime2": 0x2A, "datetimeoffset": 0x2B}[name]
        props = bytes([base.scale])
        data = _temporal_bytes(base, value)
    elif name in ("decimal", "numeric"):
        tid = 0x6A if name == "decimal" else 0x6C
        props = bytes([base.precision, base.scale])
        data = _decimal_bytes(base, value)
    elif name in ("binary", "varbinary"):
        tid = _BIN_IDS[name]
        data = as_bytes(value)
        if name == "binary":
            data = data[: base.length].ljust(base.length, b"\x00")
        props = struct.pack("<H", base.length)
    elif name in _CHAR_IDS:
        tid = _CHAR_IDS[name]
        data = _text_bytes(base, value)
        # a UTF-8 collation is not valid inside a sql_variant; SQL Server converts first
        props = base.coll.without_utf8().wire() + struct.pack("<H", base.max_bytes())
        if base.coll.utf8:
            data = base.coll.without_utf8().encode(str(value))
    else:
        raise ValueError(f"{base.sql()} cannot be sent as a sql_variant")
    return bytes([tid, len(props)]) + props + data


# ---------------------------------------------------------------------------------------------
# RPC parameter decoding (MS-TDS 2.2.6.6)


def _read_plp(reader: Reader) -> bytes | None:
    total = reader.u64()
    if total == PLP_NULL:
        return None
    parts = []
    while True:
        size = reader.u32()
        if size == 0:
            break
        parts.append(reader.take(size))
    return b"".join(parts)


def _read_temporal(reader: Reader, tid: int, scale: int) -> Temporal | None:
    size = reader.u8()
    if size == 0:
        return None
    data = reader.take(size)
    if tid == 0x28:
        return Temporal(int.from_bytes(data, "little"), None)
    tsize = _time_size(scale)
    ticks = int.from_bytes(data[:tsize], "little") * _POW10[7 - scale]
    if tid == 0x29:
        return Temporal(None, ticks)
    days = int.from_bytes(data[tsize : tsize + 3], "little")
    if tid == 0x2A:
        return Temporal(days, ticks)
    offset = struct.unpack("<h", data[tsize + 3 : tsize + 5])[0]
    # the wire carries UTC; keep the local wall-clock time with its offset
    total = days * 86_400 * 10**7 + ticks + offset * 60 * 10**7
    return Temporal(total // (86_400 * 10**7), total % (86_400 * 10**7), offset)


def _decode_fixed(tid: int, size: int, data: bytes) -> tuple[SqlType, object]:  # noqa: PLR0911 (a dispatch over kinds)
    if tid in (0x26, 0x30, 0x34, 0x38, 0x7F):
        name = {1: "tinyint", 2: "smallint", 4: "int", 8: "bigint"}[size]
        return scalar(name), int.from_bytes(data, "little", signed=size != 1)
    if tid in (0x68, 0x32):
        return scalar("bit"), data != b"\x00"
    if tid in (0x6D, 0x3B, 0x3E):
        if size == 4:
            return scalar("real"), struct.unpack("<f", data)[0]
        return scalar("float"), struct.unpack("<d", data)[0]
    if tid in (0x6E, 0x3C, 0x7A):
        if size == 8:
            high, low = struct.unpack("<iI", data)
            return scalar("money", precision=19, scale=4), Decimal((high << 32) | low) / 10000
        return scalar("smallmoney", precision=10, scale=4), Decimal(
            struct.unpack("<i", data)[0]
        ) / 10000
    if tid in (0x6F, 0x3D, 0x3A):
        base = dt.date(1900, 1, 1).toordinal() - 1
        if size == 8:
            days, ticks = struct.unpack("<iI", data)
            return scalar("datetime"), Temporal(base + days, (ticks * 10**7 + 150) // 300)
        days16, minutes = struct.unpack("<HH", data)
        return scalar("smalldatetime"), Temporal(base + days16, minutes * 60 * 10**7)
    raise ProtocolError(f"unsupported parameter type 0x{tid:02x}")


_FIXED_SIZES = {0x30: 1, 0x34: 2, 0x38: 4, 0x7F: 8, 0x32: 1, 0x3B: 4, 0x3E: 8}
_FIXED_SIZES.update({0x3C: 8, 0x7A: 4, 0x3D: 8, 0x3A: 4})


def decode_param(reader: Reader) -> tuple[SqlType, object]:  # noqa: PLR0911, PLR0912, PLR0915 (a dispatch over kinds)
    """Read TYPE_INFO and one value of an RPC parameter; returns its type and Python value."""
    tid = reader.u8()
    if tid in _FIXED_SIZES:
        size = _FIXED_SIZES[tid]
        return _decode_fixed(tid, size, reader.take(size))
    if tid in (0x26, 0x68, 0x6D, 0x6E, 0x6F):
        size = reader.u8()
        length = reader.u8()
        if length == 0:
            return _decode_fixed(tid, size, b"\x00" * size)[0], None
        return _decode_fixed(tid, size, reader.take(length))
    if tid in (0x6A, 0x6C):
        reader.u8()
        precision, scale = reader.u8(), reader.u8()
        t = scalar("decimal" if tid == 0x6A else "numeric", precision=precision, scale=scale)
        length = reader.u8()
        if length == 0:
            return t, None
        digits = reader.take(length)
        magnitude = int.from_bytes(digits[1:], "little")
        number = Decimal(magnitude if digits[0] else -magnitude).scaleb(-scale)
        return t, number
    if tid in (0x28, 0x29, 0x2A, 0x2B):
        scale = 0 if tid == 0x28 else reader.u8()
        if scale > 7:
            raise ProtocolError(f"invalid scale {scale}")
        names = {0x28: "date", 0x29: "time", 0x2A: "datetime2", 0x2B: "datetimeoffset"}
        return scalar(names[tid], scale=scale), _read_temporal(reader, tid, scale)
    if tid == 0x24:
        reader.u8()
        length = reader.u8()
        if length == 0:
            return scalar("uniqueidentifier"), None
        return scalar("uniqueidentifier"), uuid.UUID(bytes_le=reader.take(16))
    if tid in (0xA7, 0xAF, 0xE7, 0xEF, 0xA5, 0xAD):
        maxlen = reader.u16()
        is_char = tid in (0xA7, 0xAF, 0xE7, 0xEF)
        codec = "cp1252"
        if is_char:
            codec = codec_of(reader.take(5))  # the parameter's collation (2.2.5.1.2)
        names = {0xA7: "varchar", 0xAF: "char", 0xE7: "nvarchar", 0xEF: "nchar"}
        names.update({0xA5: "varbinary", 0xAD: "binary"})
        wide = tid in (0xE7, 0xEF)
        data: bytes | None
        if maxlen == 0xFFFF:
            t = scalar(names[tid], length=MAX)
            data = _read_plp(reader)
        else:
            t = scalar(names[tid], length=maxlen // 2 if wide else maxlen)
            size = reader.u16()
            data = None if size == 0xFFFF else reader.take(size)
        if data is None:
            return t, None
        if not is_char:
            return t, data
        return t, decode_utf16(data) if wide else data.decode(codec, errors="replace")
    if tid == 0xF1:
        if reader.u8():
            reader.b_varchar()
            reader.b_varchar()
            reader.us_varchar()
        xml = _read_plp(reader)
        return scalar("xml", length=MAX), None if xml is None else decode_utf16(xml)
    raise ProtocolError(f"unsupported parameter type 0x{tid:02x}")
