"""The emulator's catalog: declared SQL Server types of every table the engine holds.

DuckDB stores the rows; this catalog remembers what SQL Server would (``nvarchar(50)`` rather
than DuckDB's VARCHAR, ``datetime2(7)`` rather than text), so results are encoded with the
declared types, and ``sys.sp_cdc_get_captured_columns`` can report them.
"""

from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

from mssql_cdc.emulator.protocol.types import SqlType

__all__ = ["Catalog", "ColumnDef", "TableDef"]


@dataclass(frozen=True)
class ColumnDef:
    name: str
    type: SqlType
    nullable: bool = True
    identity: bool = False
    #: the engine expression of a computed column (``None`` for a stored column)
    computed: str | None = None


@dataclass
class TableDef:
    schema: str
    name: str
    columns: list[ColumnDef]
    primary_key: list[str] = field(default_factory=list)
    object_id: int = 0
    #: when :meth:`Catalog.add` registered the table (server local time)
    created: dt.datetime | None = None
    #: the object id of the primary key constraint (``sys.objects`` type ``PK``)
    pk_object_id: int = 0
    #: a system view that has only some of its documented columns: ``SELECT *`` is refused
    partial: bool = False

    @property
    def pk_name(self) -> str:
        """The primary key's name (the emulator does not keep a declared one)."""
        return f"PK_{self.name}"

    @property
    def qualified(self) -> str:
        return f"{self.schema}.{self.name}"

    def column(self, name: str) -> ColumnDef | None:
        lowered = name.lower()
        for col in self.columns:
            if col.name.lower() == lowered:
                return col
        return None

    def index(self, name: str) -> int:
        lowered = name.lower()
        for i, col in enumerate(self.columns):
            if col.name.lower() == lowered:
                return i
        raise KeyError(name)


#: the schemas every database has, with their ``schema_id`` ("sys.schemas (Transact-SQL)",
#: "Ownership and user-schema separation"); schemas a database creates are numbered from 5
BUILTIN_SCHEMAS = (("dbo", 1), ("guest", 2), ("INFORMATION_SCHEMA", 3), ("sys", 4))


class Catalog:
    def __init__(self, now: Callable[[], dt.datetime] | None = None) -> None:
        self.tables: dict[tuple[str, str], TableDef] = {}
        self._ids = itertools.count(245575913, 16)
        self._now = now or dt.datetime.now
        #: lower-case schema name -> (name as created, schema_id)
        self.schemas: dict[str, tuple[str, int]] = {
            name.lower(): (name, sid) for name, sid in BUILTIN_SCHEMAS
        }
        self._schema_ids = itertools.count(5)

    def add(self, table: TableDef) -> TableDef:
        table.object_id = next(self._ids)
        table.pk_object_id = next(self._ids)
        table.created = self._now()
        self.add_schema(table.schema)
        self.tables[(table.schema.lower(), table.name.lower())] = table
        return table

    def add_schema(self, name: str) -> int:
        """The ``schema_id`` of schema ``name``, numbering it if it is new."""
        known = self.schemas.get(name.lower())
        if known is not None:
            return known[1]
        sid = next(self._schema_ids)
        self.schemas[name.lower()] = (name, sid)
        return sid

    def schema_id(self, name: str) -> int | None:
        known = self.schemas.get(name.lower())
        return None if known is None else known[1]

    def schema_name(self, schema_id: int) -> str | None:
        for name, sid in self.schemas.values():
            if sid == schema_id:
                return name
        return None

    def by_id(self, object_id: int) -> TableDef | None:
        for table in self.tables.values():
            if table.object_id == object_id:
                return table
        return None

    def get(self, schema: str, name: str) -> TableDef | None:
        return self.tables.get((schema.lower(), name.lower()))

    def drop(self, schema: str, name: str) -> None:
        self.tables.pop((schema.lower(), name.lower()), None)
