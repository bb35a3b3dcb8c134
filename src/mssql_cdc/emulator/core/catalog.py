"""The emulator's catalog: declared SQL Server types of every table the engine holds.

DuckDB stores the rows; this catalog remembers what SQL Server would (``nvarchar(50)`` rather
than DuckDB's VARCHAR, ``datetime2(7)`` rather than text), so results are encoded with the
declared types, and ``sys.sp_cdc_get_captured_columns`` can report them.
"""

from __future__ import annotations

import itertools
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


class Catalog:
    def __init__(self) -> None:
        self.tables: dict[tuple[str, str], TableDef] = {}
        self._ids = itertools.count(245575913, 16)

    def add(self, table: TableDef) -> TableDef:
        table.object_id = next(self._ids)
        self.tables[(table.schema.lower(), table.name.lower())] = table
        return table

    def get(self, schema: str, name: str) -> TableDef | None:
        return self.tables.get((schema.lower(), name.lower()))

    def drop(self, schema: str, name: str) -> None:
        self.tables.pop((schema.lower(), name.lower()), None)
