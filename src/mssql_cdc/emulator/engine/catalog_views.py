"""The object catalog views and the INFORMATION_SCHEMA views: their columns and their rows.

Each view is a list of ``(column, SQL Server type)`` in the order of its Microsoft reference
page and a function giving its rows for a user; :mod:`system_views` turns them into a
subquery. Only the tables the user may see are listed (some permission on the table or one
of its columns: "Metadata Visibility Configuration"), as in SQL Server.

* ``sys.objects`` ("sys.objects (Transact-SQL)"): a ``U`` / ``USER_TABLE`` row per table and a
  ``PK`` / ``PRIMARY_KEY_CONSTRAINT`` row per primary key (``parent_object_id`` its table).
  The ``cdc`` schema's tables are SQL Server's own ("Change Data Capture Tables": system
  tables), so ``is_ms_shipped = 1`` for them. ``type`` is ``char(2)``: ``'U '`` on the wire.
* ``sys.tables`` ("sys.tables (Transact-SQL)"): the ``sys.objects`` columns and
  ``is_tracked_by_cdc``; its other documented columns are not there (``SELECT *`` is refused).
* ``sys.columns`` ("sys.columns (Transact-SQL)", SQL Server 2022's 40 columns): a row per
  column of each table, ``column_id`` its position; lengths, precision, scale and collation as
  :func:`systypes.column_shape` gives them. The emulator has no defaults, rules, sparse,
  replicated, FILESTREAM, encrypted, masked, hidden, graph or ledger columns: those flags are
  0 and their ids and descriptions 0 or NULL as the page gives for "none".
* ``sys.types`` ("sys.types (Transact-SQL)"): the system types of :mod:`systypes`.
* ``INFORMATION_SCHEMA.TABLES`` and ``.COLUMNS`` ("TABLES (Transact-SQL)", "COLUMNS
  (Transact-SQL)"): ``BASE TABLE`` rows and their columns; ``NUMERIC_PRECISION`` for the
  numeric types, ``NUMERIC_PRECISION_RADIX`` 10 (2 for ``float`` and ``real``),
  ``DATETIME_PRECISION`` for the date/time types, character lengths in characters and bytes
  (-1 for ``(max)`` and ``xml``), ``CHARACTER_SET_NAME`` ``UNICODE`` for the N types and the
  code page's set (``iso_1`` for 1252) for the others.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from mssql_cdc.emulator.core.systypes import SYSTEM_TYPES, column_shape
from mssql_cdc.emulator.protocol.temporal import datetime_text
from mssql_cdc.emulator.protocol.types import MAX, SqlType, scalar

if TYPE_CHECKING:
    from mssql_cdc.emulator.core.catalog import ColumnDef, TableDef
    from mssql_cdc.emulator.engine.database import Database

__all__ = ["CATALOG_VIEWS", "CatalogView", "visible_tables"]

_SYSNAME = scalar("nvarchar", length=128)
_INT = scalar("int")
_BIT = scalar("bit")
_TINY = scalar("tinyint")
_SMALL = scalar("smallint")
_N60 = scalar("nvarchar", length=60)

Rows = list[tuple[object, ...]]


class CatalogView:
    """One view: its documented columns (all of them, unless ``partial``) and its rows."""

    def __init__(
        self,
        columns: list[tuple[str, SqlType]],
        rows: Callable[[Database, str], Rows],
        *,
        partial: bool = False,
    ) -> None:
        self.columns = columns
        self.rows = rows
        self.partial = partial


def visible_tables(db: Database, user: str) -> list[TableDef]:
    """The tables ``user`` may see, by object id."""
    security = db.security
    tables = [t for t in db.catalog.tables.values() if security.can_see(user, t.schema, t.name)]
    return sorted(tables, key=lambda t: t.object_id)


def _shipped(table: TableDef) -> bool:
    return table.schema.lower() == "cdc"


def _created(table: TableDef) -> str | None:
    return None if table.created is None else datetime_text(table.created)


# --- sys.objects and sys.tables ---

_OBJECTS: list[tuple[str, SqlType]] = [
    ("name", _SYSNAME),
    ("object_id", _INT),
    ("principal_id", _INT),
    ("schema_id", _INT),
    ("parent_object_id", _INT),
    ("type", scalar("char", length=2)),
    ("type_desc", _N60),
    ("create_date", scalar("datetime")),
    ("modify_date", scalar("datetime")),
    ("is_ms_shipped", _BIT),
    ("is_published", _BIT),
    ("is_schema_published", _BIT),
]


def _object_row(db: Database, table: TableDef) -> tuple[object, ...]:
    created = _created(table)
    schema_id = db.catalog.schema_id(table.schema)
    shipped = _shipped(table)
    return (
        table.name,
        table.object_id,
        None,
        schema_id,
        0,
        "U",  # char(2): the wire pads it to "U "
        "USER_TABLE",
        created,
        created,
        shipped,
        False,
        False,
    )


def _objects(db: Database, user: str) -> Rows:
    rows: Rows = []
    for table in visible_tables(db, user):
        rows.append(_object_row(db, table))
        if table.primary_key:
            created = _created(table)
            rows.append(
                (
                    table.pk_name,
                    table.pk_object_id,
                    None,
                    db.catalog.schema_id(table.schema),
                    table.object_id,
                    "PK",
                    "PRIMARY_KEY_CONSTRAINT",
                    created,
                    created,
                    _shipped(table),
                    False,
                    False,
                )
            )
    return sorted(rows, key=lambda r: int(r[1]))  # type: ignore[call-overload]


def _tables(db: Database, user: str) -> Rows:
    tracked = {(i.source.schema.lower(), i.source.name.lower()) for i in db.cdc.instances.values()}
    return [
        (*_object_row(db, t), (t.schema.lower(), t.name.lower()) in tracked)
        for t in visible_tables(db, user)
    ]


# --- sys.columns ---

_COLUMNS: list[tuple[str, SqlType]] = [
    ("object_id", _INT),
    ("name", _SYSNAME),
    ("column_id", _INT),
    ("system_type_id", _TINY),
    ("user_type_id", _INT),
    ("max_length", _SMALL),
    ("precision", _TINY),
    ("scale", _TINY),
    ("collation_name", _SYSNAME),
    ("is_nullable", _BIT),
    ("is_ansi_padded", _BIT),
    ("is_rowguidcol", _BIT),
    ("is_identity", _BIT),
    ("is_computed", _BIT),
    ("is_filestream", _BIT),
    ("is_replicated", _BIT),
    ("is_non_sql_subscribed", _BIT),
    ("is_merge_published", _BIT),
    ("is_dts_replicated", _BIT),
    ("is_xml_document", _BIT),
    ("xml_collection_id", _INT),
    ("default_object_id", _INT),
    ("rule_object_id", _INT),
    ("is_sparse", _BIT),
    ("is_column_set", _BIT),
    ("generated_always_type", _TINY),
    ("generated_always_type_desc", _N60),
    ("encryption_type", _INT),
    ("encryption_type_desc", scalar("nvarchar", length=64)),
    ("encryption_algorithm_name", _SYSNAME),
    ("column_encryption_key_id", _INT),
    ("column_encryption_key_database_name", _SYSNAME),
    ("is_hidden", _BIT),
    ("is_masked", _BIT),
    ("graph_type", _INT),
    ("graph_type_desc", _N60),
    ("is_data_deletion_filter_column", _BIT),
    ("ledger_view_column_type", _INT),
    ("ledger_view_column_type_desc", _N60),
    ("is_dropped_ledger_column", _BIT),
]
#: character, binary and variant types: ANSI_PADDING applies ("sys.columns", is_ansi_padded)
_PADDED = frozenset(
    {
        "char",
        "varchar",
        "nchar",
        "nvarchar",
        "text",
        "ntext",
        "binary",
        "varbinary",
        "image",
        "sql_variant",
    }
)


def _column_row(table: TableDef, column_id: int, col: ColumnDef) -> tuple[object, ...]:
    shape = column_shape(col.type)
    base = shape.type
    return (
        table.object_id,
        col.name,
        column_id,
        base.system_type_id,
        base.user_type_id,
        shape.max_length,
        shape.precision,
        shape.scale,
        shape.collation_name,
        col.nullable,
        base.name in _PADDED,
        False,
        col.identity,
        col.computed is not None,
        False,
        False,
        False,
        False,
        False,
        False,
        0,
        0,
        0,
        False,
        False,
        0,
        "NOT_APPLICABLE",
        None,
        None,
        None,
        None,
        None,
        False,
        False,
        None,
        None,
        False,
        None,
        None,
        False,
    )


def _columns(db: Database, user: str) -> Rows:
    return [
        _column_row(table, n, col)
        for table in visible_tables(db, user)
        for n, col in enumerate(table.columns, start=1)
    ]


# --- sys.types ---

_TYPES: list[tuple[str, SqlType]] = [
    ("name", _SYSNAME),
    ("system_type_id", _TINY),
    ("user_type_id", _INT),
    ("schema_id", _INT),
    ("principal_id", _INT),
    ("max_length", _SMALL),
    ("precision", _TINY),
    ("scale", _TINY),
    ("collation_name", _SYSNAME),
    ("is_nullable", _BIT),
    ("is_user_defined", _BIT),
    ("is_assembly_type", _BIT),
    ("default_object_id", _INT),
    ("rule_object_id", _INT),
    ("is_table_type", _BIT),
]


def _types(db: Database, user: str) -> Rows:
    sys_id = db.catalog.schema_id("sys")
    default = column_shape(scalar("nvarchar", length=1)).collation_name
    return [
        (
            t.name,
            t.system_type_id,
            t.user_type_id,
            sys_id,
            None,
            t.max_length,
            t.precision,
            t.scale,
            default if t.collated else None,
            t.is_nullable,
            False,
            t.is_assembly_type,
            0,
            0,
            False,
        )
        for t in SYSTEM_TYPES
    ]


# --- INFORMATION_SCHEMA ---

_N128 = scalar("nvarchar", length=128)
_IS_TABLES: list[tuple[str, SqlType]] = [
    ("TABLE_CATALOG", _N128),
    ("TABLE_SCHEMA", _N128),
    ("TABLE_NAME", _SYSNAME),
    ("TABLE_TYPE", scalar("varchar", length=10)),
]
_IS_COLUMNS: list[tuple[str, SqlType]] = [
    ("TABLE_CATALOG", _N128),
    ("TABLE_SCHEMA", _N128),
    ("TABLE_NAME", _N128),
    ("COLUMN_NAME", _N128),
    ("ORDINAL_POSITION", _INT),
    ("COLUMN_DEFAULT", scalar("nvarchar", length=4000)),
    ("IS_NULLABLE", scalar("varchar", length=3)),
    ("DATA_TYPE", _N128),
    ("CHARACTER_MAXIMUM_LENGTH", _INT),
    ("CHARACTER_OCTET_LENGTH", _INT),
    ("NUMERIC_PRECISION", _TINY),
    ("NUMERIC_PRECISION_RADIX", _SMALL),
    ("NUMERIC_SCALE", _INT),
    ("DATETIME_PRECISION", _SMALL),
    ("CHARACTER_SET_CATALOG", _N128),
    ("CHARACTER_SET_SCHEMA", _N128),
    ("CHARACTER_SET_NAME", _N128),
    ("COLLATION_CATALOG", _N128),
    ("COLLATION_SCHEMA", _N128),
    ("COLLATION_NAME", _N128),
    ("DOMAIN_CATALOG", _N128),
    ("DOMAIN_SCHEMA", _N128),
    ("DOMAIN_NAME", _N128),
]
_NUMERIC = frozenset(
    {
        "tinyint",
        "smallint",
        "int",
        "bigint",
        "decimal",
        "numeric",
        "money",
        "smallmoney",
        "real",
        "float",
    }
)
_TEMPORAL = frozenset({"date", "time", "datetime2", "datetimeoffset", "datetime", "smalldatetime"})
#: the largest length of the long types, in characters ("ntext, text, and image")
_LONG_CHARS = {"text": 2**31 - 1, "ntext": 2**30 - 1, "image": 2**31 - 1}


def _is_tables(db: Database, user: str) -> Rows:
    return [(db.name, t.schema, t.name, "BASE TABLE") for t in visible_tables(db, user)]


def _char_lengths(t: SqlType) -> tuple[int | None, int | None]:
    """CHARACTER_MAXIMUM_LENGTH and CHARACTER_OCTET_LENGTH of a column type."""
    if t.name in _LONG_CHARS:
        chars = _LONG_CHARS[t.name]
        return chars, chars * (2 if t.name == "ntext" else 1)
    if t.name == "xml":
        return -1, -1
    if t.is_string or t.name in ("binary", "varbinary"):
        if t.length == MAX:
            return -1, -1
        wide = t.name in ("nchar", "nvarchar")
        return t.length, t.length * (2 if wide else 1)
    return None, None


def _charset(t: SqlType) -> str | None:
    if t.name in ("nchar", "nvarchar", "ntext"):
        return "UNICODE"
    if t.name in ("char", "varchar", "text"):
        page = t.coll.code_page
        return "iso_1" if page == 1252 else ("UTF8" if t.coll.utf8 else f"cp{page}")
    return None


def _is_column_row(db: Database, table: TableDef, n: int, col: ColumnDef) -> tuple[object, ...]:
    shape = column_shape(col.type)
    name = shape.type.name
    chars, octets = _char_lengths(col.type)
    numeric = name in _NUMERIC
    charset = _charset(col.type)
    return (
        db.name,
        table.schema,
        table.name,
        col.name,
        n,
        None,
        "YES" if col.nullable else "NO",
        name,
        chars,
        octets,
        shape.precision if numeric else None,
        (2 if name in ("real", "float") else 10) if numeric else None,
        shape.scale if numeric and name not in ("real", "float") else None,
        shape.scale if name in _TEMPORAL else None,
        "master" if charset else None,
        None,
        charset,
        None,
        None,
        shape.collation_name,
        None,
        None,
        None,
    )


def _is_columns(db: Database, user: str) -> Rows:
    return [
        _is_column_row(db, table, n, col)
        for table in visible_tables(db, user)
        for n, col in enumerate(table.columns, start=1)
    ]


#: ``(schema, view)`` -> view
CATALOG_VIEWS: dict[tuple[str, str], CatalogView] = {
    ("sys", "objects"): CatalogView(_OBJECTS, _objects),
    ("sys", "tables"): CatalogView([*_OBJECTS, ("is_tracked_by_cdc", _BIT)], _tables, partial=True),
    ("sys", "columns"): CatalogView(_COLUMNS, _columns),
    ("sys", "types"): CatalogView(_TYPES, _types),
    ("information_schema", "tables"): CatalogView(_IS_TABLES, _is_tables),
    ("information_schema", "columns"): CatalogView(_IS_COLUMNS, _is_columns),
}
