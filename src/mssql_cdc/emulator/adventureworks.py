"""AdventureWorks loader: six tables of Microsoft's sample database into the emulator.

Reads ``tables.json`` of a data directory (the package ships one: ``data/adventureworks`` next
to this module, see :func:`default_directory`) and, per table, creates the SQL Server table in
its schema (declared types, with alias types such as ``dbo.Name`` already given as their base
type; nullability; IDENTITY; computed columns; primary key) and bulk-loads the data file into
the engine, bypassing T-SQL: the file is split in Python, staged as an Arrow table of strings
and cast by DuckDB in one ``INSERT ... SELECT``, so the whole set loads in about a second.

What SQL Server would do and this loader copies:

* identity values in the files are kept (like ``BULK INSERT ... KEEPIDENTITY``) and the next
  generated value is the largest loaded one plus 1;
* computed columns are not loaded, the engine computes them; their values in the files are
  compared with the computed ones (:attr:`LoadedTable.computed_mismatches`);
* ``datetime`` values are stored in their canonical text, rounded to 1/300 s;
* an empty field is NULL (``tables.json``'s ``about``).

A data file ``X.csv`` may be stored gzip-compressed as ``X.csv.gz`` (the packaged copy is).
Files are decoded as UTF-8 unless they start with a UTF-16 or UTF-8 byte order mark. The load
is not a logged transaction: it happens before any table has a capture instance, like a
database restored from a backup.
"""

from __future__ import annotations

import gzip
import json
import logging
import os
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

from mssql_cdc.emulator.core.catalog import ColumnDef, TableDef
from mssql_cdc.emulator.core.literals import temporal_text
from mssql_cdc.emulator.engine.ddl import create_engine_table
from mssql_cdc.emulator.protocol.temporal import parse_temporal
from mssql_cdc.emulator.protocol.types import MAX, SqlType, scalar

if TYPE_CHECKING:
    from mssql_cdc.emulator.engine.database import Database

__all__ = [
    "ENV_DIR",
    "ColumnSpec",
    "LoadReport",
    "LoadedTable",
    "TableSpec",
    "default_directory",
    "load",
    "packaged_directory",
    "parse_type",
    "read_rows",
    "read_tables",
]

log = logging.getLogger("mssql_cdc.emulator.adventureworks")

#: environment variable naming the data directory (else the packaged copy)
ENV_DIR = "MSSQL_CDC_ADVENTUREWORKS"
_TYPE = re.compile(r"^\s*(\w+)\s*(?:\(\s*(\w+)\s*(?:,\s*(\d+)\s*)?\))?\s*$")
_BOMS = (
    (b"\xef\xbb\xbf", "utf-8-sig"),
    (b"\xff\xfe", "utf-16"),
    (b"\xfe\xff", "utf-16"),
)
#: Engine expressions of the computed columns of tables.json, whose definitions are partly
#: prose there (``AccountNumber``). Each casts to the declared type's engine storage.
_COMPUTED: dict[tuple[str, str, str], str] = {
    ("purchasing", "purchaseorderheader", "totaldue"): (
        'CAST(COALESCE("SubTotal" + "TaxAmt" + "Freight", 0) AS DECIMAL(19,4))'
    ),
    ("purchasing", "purchaseorderdetail", "linetotal"): (
        'CAST(COALESCE("OrderQty" * "UnitPrice", 0.00) AS DECIMAL(19,4))'
    ),
    ("purchasing", "purchaseorderdetail", "stockedqty"): (
        'CAST(COALESCE("ReceivedQty" - "RejectedQty", 0.00) AS DECIMAL(9,2))'
    ),
    ("sales", "customer", "accountnumber"): (
        "COALESCE('AW' || lpad(CAST(\"CustomerID\" AS VARCHAR), 8, '0'), '')"
    ),
}


def parse_type(text: str) -> SqlType:
    """A SQL Server type as tables.json spells it: ``nvarchar(50)``, ``decimal(8,2)``."""
    match = _TYPE.match(text)
    if match is None:
        raise ValueError(f"cannot read the SQL Server type {text!r}")
    name, first, second = match.group(1).lower(), match.group(2), match.group(3)
    if name in ("decimal", "numeric"):
        return scalar("decimal", precision=int(first or 18), scale=int(second or 0))
    if name == "money":
        return scalar("money", precision=19, scale=4)
    if name == "smallmoney":
        return scalar("smallmoney", precision=10, scale=4)
    if name in ("char", "varchar", "nchar", "nvarchar", "binary", "varbinary"):
        length = MAX if (first or "").lower() == "max" else int(first or 1)
        return scalar(name, length=length)
    if name in ("time", "datetime2", "datetimeoffset"):
        return scalar(name, scale=int(first if first is not None else 7))
    if name in (
        "tinyint",
        "smallint",
        "int",
        "bigint",
        "bit",
        "datetime",
        "smalldatetime",
        "date",
        "uniqueidentifier",
        "float",
        "real",
    ):
        return scalar(name)
    raise ValueError(f"unsupported SQL Server type {text!r}")


@dataclass(frozen=True)
class ColumnSpec:
    """One column of tables.json."""

    name: str
    type_text: str
    nullable: bool
    identity: bool = False
    #: tables.json's description of a computed column's definition (``None``: stored)
    computed: str | None = None
    #: the alias type the column is declared with (``dbo.Name``), else ``None``
    alias: str | None = None

    @property
    def type(self) -> SqlType:
        return parse_type(self.type_text)


@dataclass(frozen=True)
class TableSpec:
    """One table of tables.json: where its file is and how it is separated."""

    schema: str
    name: str
    file: str
    field_sep: str
    row_sep: str
    rows: int
    primary_key: tuple[str, ...]
    columns: tuple[ColumnSpec, ...]

    @property
    def qualified(self) -> str:
        return f"{self.schema}.{self.name}"

    @property
    def identity(self) -> ColumnSpec | None:
        return next((c for c in self.columns if c.identity), None)

    def matches(self, name: str) -> bool:
        """Whether ``name`` (``Schema.Table`` or ``Table``, any case) names this table."""
        lowered = name.strip().lower().replace("[", "").replace("]", "")
        return lowered in (self.qualified.lower(), self.name.lower())


@dataclass
class LoadedTable:
    qualified: str
    rows: int
    seconds: float
    #: rows whose computed-column values in the file differ from the engine's
    computed_mismatches: int = 0


@dataclass
class LoadReport:
    directory: Path
    tables: list[LoadedTable] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def rows(self) -> dict[str, int]:
        return {t.qualified: t.rows for t in self.tables}


def packaged_directory() -> Path:
    """The AdventureWorks data shipped inside the package (``data/adventureworks``: tables.json,
    the gzip-compressed data files, Microsoft's MIT license and a README on provenance)."""
    return Path(__file__).resolve().parent / "data" / "adventureworks"


def default_directory() -> Path:
    """``$MSSQL_CDC_ADVENTUREWORKS`` when set, else :func:`packaged_directory`.

    Raises ``FileNotFoundError`` naming the directory when it holds no ``tables.json`` (an
    installation without the package data, or a wrong ``$MSSQL_CDC_ADVENTUREWORKS``).
    """
    env = os.environ.get(ENV_DIR)
    directory = Path(env) if env else packaged_directory()
    if not (directory / "tables.json").is_file():
        source = f"${ENV_DIR}" if env else "the mssql_cdc package"
        raise FileNotFoundError(
            f"no AdventureWorks data: {directory} (from {source}) holds no tables.json; set "
            f"{ENV_DIR} to the directory holding tables.json and the data files"
        )
    return directory


def _column(raw: Sequence[object]) -> ColumnSpec:
    name, type_text, nullable = str(raw[0]), str(raw[1]), bool(raw[2])
    identity, computed, alias = False, None, None
    for extra in raw[3:]:
        text = str(extra)
        if text == "identity":
            identity = True
        elif text.startswith("computed:"):
            computed = text.removeprefix("computed:").strip()
        elif text.startswith("alias:"):
            alias = text.removeprefix("alias:").strip()
    return ColumnSpec(name, type_text, nullable, identity, computed, alias)


def read_tables(directory: str | Path) -> list[TableSpec]:
    """The table specifications of ``directory/tables.json``."""
    doc = json.loads((Path(directory) / "tables.json").read_text(encoding="utf-8"))
    return [
        TableSpec(
            schema=t["schema"],
            name=t["name"],
            file=t["file"],
            field_sep=t["field_sep"],
            row_sep=t["row_sep"],
            rows=int(t["rows"]),
            primary_key=tuple(t["primary_key"]),
            columns=tuple(_column(c) for c in t["columns"]),
        )
        for t in doc["tables"]
    ]


def _decode(data: bytes) -> str:
    for bom, codec in _BOMS:
        if data.startswith(bom):
            return data.decode(codec)
    return data.decode("utf-8")


def read_rows(spec: TableSpec, directory: str | Path) -> list[list[str]]:
    """The rows of a table's data file as lists of field texts ("" is NULL).

    Raises ``ValueError`` when a row has the wrong number of fields or the file does not hold
    the row count tables.json gives.
    """
    path = Path(directory) / spec.file
    compressed = path.with_name(path.name + ".gz")
    if not path.is_file() and compressed.is_file():
        path = compressed
        text = _decode(gzip.decompress(path.read_bytes()))
    else:
        text = _decode(path.read_bytes())
    row_sep = spec.row_sep
    if "\r\n" in text and "\r\n" not in row_sep and row_sep.endswith("\n"):
        text = text.replace("\r\n", "\n")  # a file that went through a Windows checkout
    chunks = text.split(row_sep)
    if chunks and chunks[-1] == "":
        chunks.pop()
    width = len(spec.columns)
    rows = [chunk.split(spec.field_sep) for chunk in chunks]
    for number, row in enumerate(rows, 1):
        if len(row) != width:
            raise ValueError(f"{path}: row {number} has {len(row)} fields, expected {width}")
    if len(rows) != spec.rows:
        raise ValueError(f"{path}: {len(rows)} rows, tables.json says {spec.rows}")
    return rows


def _computed_expression(spec: TableSpec, col: ColumnSpec) -> str:
    key = (spec.schema.lower(), spec.name.lower(), col.name.lower())
    if key not in _COMPUTED:
        raise ValueError(f"no engine definition for computed column {spec.qualified}.{col.name}")
    return _COMPUTED[key]


def _cast(t: SqlType, column: str) -> str:
    """The engine expression that turns the staged text column into ``t``'s storage."""
    quoted = f'"{column}"'
    if t.is_temporal or t.storage() == "VARCHAR":
        return quoted
    return f"CAST({quoted} AS {t.storage()})"


def _staged(t: SqlType, values: Iterable[str]) -> pa.Array:
    """One column as an Arrow string array: NULL for "", temporal values in canonical text."""
    if not t.is_temporal:
        return pa.array([v if v != "" else None for v in values], type=pa.string())
    cache: dict[str, str] = {}
    out: list[str | None] = []
    for value in values:
        if value == "":
            out.append(None)
            continue
        text = cache.get(value)
        if text is None:
            text = cache[value] = temporal_text(t, parse_temporal(value))
        out.append(text)
    return pa.array(out, type=pa.string())


def _load_table(db: Database, spec: TableSpec, directory: Path) -> LoadedTable:
    started = time.perf_counter()
    if db.catalog.get(spec.schema, spec.name) is not None:
        raise ValueError(f"table {spec.qualified} already exists")
    rows = read_rows(spec, directory)
    types = [c.type for c in spec.columns]
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in spec.columns]
    staged = pa.table(
        {f"c{i}": _staged(t, col) for i, (t, col) in enumerate(zip(types, columns, strict=True))}
    )
    identity = spec.identity
    seed = 1
    if identity is not None and rows:
        position = spec.columns.index(identity)
        seed = max(int(v) for v in columns[position]) + 1
    defs = [
        ColumnDef(
            c.name,
            t,
            c.nullable and c.name not in spec.primary_key,
            c.identity,
            _computed_expression(spec, c) if c.computed is not None else None,
        )
        for c, t in zip(spec.columns, types, strict=True)
    ]
    cursor = db.engine.cursor()
    try:
        table = _create(db, cursor, spec, defs, (seed, 1) if identity is not None else None)
        stored = [i for i, c in enumerate(defs) if c.computed is None]
        names = ", ".join(f'"{defs[i].name}"' for i in stored)
        casts = ", ".join(_cast(types[i], f"c{i}") for i in stored)
        target = f'"{table.schema}"."{table.name}"'
        cursor.register("__aw_staged", staged)
        cursor.execute(f"INSERT INTO {target} ({names}) SELECT {casts} FROM __aw_staged")
        mismatches = _check_computed(cursor, table, defs, types)
        cursor.unregister("__aw_staged")
    finally:
        cursor.close()
    seconds = time.perf_counter() - started
    if mismatches:
        log.warning("%s: %d rows whose computed values differ", spec.qualified, mismatches)
    log.info("loaded %s: %d rows in %.3f s", spec.qualified, len(rows), seconds)
    return LoadedTable(spec.qualified, len(rows), seconds, mismatches)


class _Creator:
    """The two attributes of an executor that :func:`create_engine_table` uses."""

    def __init__(self, db: Database, cursor: object) -> None:
        self.db = db
        self.cursor = cursor


def _create(
    db: Database,
    cursor: object,
    spec: TableSpec,
    defs: list[ColumnDef],
    identity: tuple[int, int] | None,
) -> TableDef:
    return create_engine_table(
        _Creator(db, cursor),  # type: ignore[arg-type]
        schema=spec.schema,
        name=spec.name,
        columns=defs,
        primary_key=list(spec.primary_key),
        identity=identity,
    )


def _check_computed(
    cursor: object, table: TableDef, defs: list[ColumnDef], types: list[SqlType]
) -> int:
    """How many rows have a computed value that differs from the file's."""
    computed = [i for i, c in enumerate(defs) if c.computed is not None]
    if not computed:
        return 0
    key = table.primary_key
    on = " AND ".join(
        f't."{k}" = {_cast(types[_position(defs, k)], f"c{_position(defs, k)}")}' for k in key
    )
    differs = " OR ".join(
        f't."{defs[i].name}" IS DISTINCT FROM {_cast(types[i], f"c{i}")}' for i in computed
    )
    sql = (
        f'SELECT count(*) FROM "{table.schema}"."{table.name}" t '
        f"JOIN __aw_staged s ON {on} WHERE {differs}"
    )
    # fetchall, not fetchone: DuckDB 2 refuses other work on the connection (the unregister
    # that follows) while an execute() result has rows left to fetch
    rows = cursor.execute(sql).fetchall()  # type: ignore[attr-defined]
    return int(rows[0][0]) if rows else 0


def _position(defs: list[ColumnDef], name: str) -> int:
    return next(i for i, c in enumerate(defs) if c.name == name)


def load(
    db: Database,
    directory: str | Path | None = None,
    tables: Iterable[str] | None = None,
) -> LoadReport:
    """Create and fill the AdventureWorks tables (all of tables.json, or ``tables``).

    ``tables`` names tables as ``Schema.Table`` or ``Table``; an unknown name is a
    ``ValueError``, as is a table that already exists.
    """
    started = time.perf_counter()
    root = Path(directory) if directory is not None else default_directory()
    specs = read_tables(root)
    if tables is not None:
        wanted = list(tables)
        chosen: list[TableSpec] = []
        for name in wanted:
            match = [s for s in specs if s.matches(name)]
            if not match:
                known = ", ".join(s.qualified for s in specs)
                raise ValueError(f"unknown AdventureWorks table {name!r} (known: {known})")
            chosen.extend(m for m in match if m not in chosen)
        specs = chosen
    report = LoadReport(root)
    with db.lock:
        for spec in specs:
            report.tables.append(_load_table(db, spec, root))
    report.seconds = time.perf_counter() - started
    log.info(
        "AdventureWorks: %d tables, %d rows in %.2f s",
        len(report.tables),
        sum(report.rows.values()),
        report.seconds,
    )
    return report
