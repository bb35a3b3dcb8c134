"""SQL Server's system data types as the catalog describes them: the rows of ``sys.types`` and
what ``sys.columns`` / ``INFORMATION_SCHEMA.COLUMNS`` say of a column of a given type.

The ids are SQL Server's ``system_type_id`` / ``user_type_id`` ("sys.types (Transact-SQL)":
for system types ``user_type_id = system_type_id``, except the CLR types ``hierarchyid``,
``geometry`` and ``geography``, which share system type 240, and ``sysname``, an alias of
``nvarchar(128)`` that is not nullable). ``TYPE_NAME(36)`` is ``uniqueidentifier`` and
``TYPE_NAME(239)`` is ``nchar`` ("TYPE_NAME (Transact-SQL)", example). The emulator is SQL
Server 2022: no ``json`` or ``vector`` type (2025).

Per column ("sys.columns (Transact-SQL)"): ``max_length`` in bytes (-1 for the ``(max)`` types
and ``xml``, 16 for ``text``/``ntext``/``image``), ``precision`` and ``scale`` for the numeric
and date/time types (0 otherwise; ``time(n)``, ``datetime2(n)`` and ``datetimeoffset(n)`` count
their digits: 8, 19 and 26 plus n plus the decimal point when n > 0), and the collation of a
character column (else NULL).
"""

from __future__ import annotations

from dataclasses import dataclass

from mssql_cdc.emulator.protocol.collations import DEFAULT as DEFAULT_COLLATION
from mssql_cdc.emulator.protocol.types import MAX, SqlType

__all__ = [
    "DEFAULT_COLLATION_NAME",
    "SYSTEM_TYPES",
    "ColumnShape",
    "SystemType",
    "column_shape",
    "type_by_id",
    "type_by_name",
]

DEFAULT_COLLATION_NAME = DEFAULT_COLLATION.name


@dataclass(frozen=True)
class SystemType:
    """A row of ``sys.types`` for a system type."""

    name: str
    system_type_id: int
    user_type_id: int
    max_length: int
    precision: int
    scale: int
    collated: bool
    is_nullable: bool = True
    is_assembly_type: bool = False


#: The system types of SQL Server 2022, in ``user_type_id`` order.
SYSTEM_TYPES: tuple[SystemType, ...] = (
    SystemType("image", 34, 34, 16, 0, 0, collated=False),
    SystemType("text", 35, 35, 16, 0, 0, collated=True),
    SystemType("uniqueidentifier", 36, 36, 16, 0, 0, collated=False),
    SystemType("date", 40, 40, 3, 10, 0, collated=False),
    SystemType("time", 41, 41, 5, 16, 7, collated=False),
    SystemType("datetime2", 42, 42, 8, 27, 7, collated=False),
    SystemType("datetimeoffset", 43, 43, 10, 34, 7, collated=False),
    SystemType("tinyint", 48, 48, 1, 3, 0, collated=False),
    SystemType("smallint", 52, 52, 2, 5, 0, collated=False),
    SystemType("int", 56, 56, 4, 10, 0, collated=False),
    SystemType("smalldatetime", 58, 58, 4, 16, 0, collated=False),
    SystemType("real", 59, 59, 4, 24, 0, collated=False),
    SystemType("money", 60, 60, 8, 19, 4, collated=False),
    SystemType("datetime", 61, 61, 8, 23, 3, collated=False),
    SystemType("float", 62, 62, 8, 53, 0, collated=False),
    SystemType("sql_variant", 98, 98, 8016, 0, 0, collated=False),
    SystemType("ntext", 99, 99, 16, 0, 0, collated=True),
    SystemType("bit", 104, 104, 1, 1, 0, collated=False),
    SystemType("decimal", 106, 106, 17, 38, 38, collated=False),
    SystemType("numeric", 108, 108, 17, 38, 38, collated=False),
    SystemType("smallmoney", 122, 122, 4, 10, 4, collated=False),
    SystemType("bigint", 127, 127, 8, 19, 0, collated=False),
    SystemType("hierarchyid", 240, 128, 892, 0, 0, collated=False, is_assembly_type=True),
    SystemType("geometry", 240, 129, -1, 0, 0, collated=False, is_assembly_type=True),
    SystemType("geography", 240, 130, -1, 0, 0, collated=False, is_assembly_type=True),
    SystemType("varbinary", 165, 165, 8000, 0, 0, collated=False),
    SystemType("varchar", 167, 167, 8000, 0, 0, collated=True),
    SystemType("binary", 173, 173, 8000, 0, 0, collated=False),
    SystemType("char", 175, 175, 8000, 0, 0, collated=True),
    SystemType("timestamp", 189, 189, 8, 0, 0, collated=False),
    SystemType("nvarchar", 231, 231, 8000, 0, 0, collated=True),
    SystemType("nchar", 239, 239, 8000, 0, 0, collated=True),
    SystemType("xml", 241, 241, -1, 0, 0, collated=False),
    SystemType("sysname", 231, 256, 256, 0, 0, collated=True, is_nullable=False),
)
_BY_NAME = {t.name: t for t in SYSTEM_TYPES}
_BY_USER_ID = {t.user_type_id: t for t in SYSTEM_TYPES}
#: the emulator's names of types SQL Server's catalog spells otherwise
_CATALOG_NAMES = {"rowversion": "timestamp"}


def type_by_name(name: str) -> SystemType | None:
    return _BY_NAME.get(_CATALOG_NAMES.get(name.lower(), name.lower()))


def type_by_id(user_type_id: int) -> SystemType | None:
    return _BY_USER_ID.get(user_type_id)


@dataclass(frozen=True)
class ColumnShape:
    """What the catalog says of a column of one type."""

    type: SystemType
    max_length: int
    precision: int
    scale: int
    collation_name: str | None


def _fraction_bytes(scale: int) -> int:
    """Bytes of the time part of time/datetime2/datetimeoffset(scale) ("time (Transact-SQL)")."""
    return 3 if scale <= 2 else (4 if scale <= 4 else 5)


def column_shape(t: SqlType) -> ColumnShape:
    """The ``sys.columns`` description of a column of type ``t`` (:class:`ColumnShape`)."""
    base = type_by_name(t.name)
    if base is None:
        raise ValueError(f"no catalog entry for type {t.name}")
    name = base.name
    length, precision, scale = base.max_length, base.precision, base.scale
    if name in ("char", "varchar", "binary", "varbinary"):
        length = -1 if t.length == MAX else t.length
    elif name in ("nchar", "nvarchar"):
        length = -1 if t.length == MAX else 2 * t.length
    elif name in ("decimal", "numeric"):
        precision, scale = t.precision, t.scale
        length = 5 if precision <= 9 else 9 if precision <= 19 else 13 if precision <= 28 else 17
    elif name in ("time", "datetime2", "datetimeoffset"):
        scale = t.scale
        digits = {"time": 8, "datetime2": 19, "datetimeoffset": 26}[name]
        precision = digits + scale + (1 if scale else 0)
        length = _fraction_bytes(scale) + {"time": 0, "datetime2": 3, "datetimeoffset": 5}[name]
    collation = (t.collation or DEFAULT_COLLATION_NAME) if base.collated else None
    return ColumnShape(base, length, precision, scale, collation)
