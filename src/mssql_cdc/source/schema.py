"""The output schema: six metadata columns, then the captured columns
(docs/reference/bronze-schema.md).

Types are kept as Spark DDL type names (``INT``, ``DECIMAL(19,4)``, ``TIMESTAMP_NTZ``) so this
module needs no Spark; ``mssql_cdc.source.datasource.to_struct`` turns them into a ``StructType``.
The type map is docs/reference/bronze-schema.md#type-map: ``sql_variant`` and ``hierarchyid`` are
STRING and ``geography``/``geometry`` (and other CLR types) as BINARY (WKB for the spatial types).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass

from mssql_cdc.errors import SchemaChangedError
from mssql_cdc.source.client import CapturedColumn

__all__ = [
    "METADATA_COLUMNS",
    "RESERVED_NAMES",
    "Column",
    "declared_columns",
    "holds",
    "output_columns",
    "spark_type",
    "union_columns",
]

log = logging.getLogger("mssql_cdc.source")


@dataclass(frozen=True)
class Column:
    """One output column: name, Spark type (DDL text), nullability, and the SQL Server type it
    is read from (``None`` for metadata columns and columns given by ``columns``)."""

    name: str
    spark_type: str
    nullable: bool = True
    sql_type: str | None = None


#: the metadata columns, in order (``_command_id`` left out with ``includeCommandId=false``)
METADATA_COLUMNS: tuple[Column, ...] = (
    Column("_capture_instance", "STRING", nullable=False),
    Column("_start_lsn", "STRING", nullable=False),
    Column("_seqval", "STRING"),
    Column("_operation", "INT", nullable=False),
    Column("_command_id", "INT"),
    Column("_commit_ts", "TIMESTAMP_NTZ"),
)
#: names a captured column may not have (metadata and sink-added columns), lower case
RESERVED_NAMES = frozenset(
    {c.name for c in METADATA_COLUMNS} | {"_batch_id", "_snapshot", "_chunk"}
)

_SIMPLE = {
    "bit": "BOOLEAN",
    "tinyint": "SMALLINT",
    "smallint": "SMALLINT",
    "int": "INT",
    "bigint": "BIGINT",
    "real": "FLOAT",
    "float": "DOUBLE",
    "money": "DECIMAL(19,4)",
    "smallmoney": "DECIMAL(10,4)",
    "date": "DATE",
    "datetime": "TIMESTAMP_NTZ",
    "datetime2": "TIMESTAMP_NTZ",
    "smalldatetime": "TIMESTAMP_NTZ",
    "datetimeoffset": "TIMESTAMP",
    "time": "STRING",
    "char": "STRING",
    "varchar": "STRING",
    "nchar": "STRING",
    "nvarchar": "STRING",
    "text": "STRING",
    "ntext": "STRING",
    "xml": "STRING",
    "uniqueidentifier": "STRING",
    "sql_variant": "STRING",
    "hierarchyid": "STRING",
    "sysname": "STRING",
    "binary": "BINARY",
    "varbinary": "BINARY",
    "image": "BINARY",
    "timestamp": "BINARY",
    "rowversion": "BINARY",
    "geography": "BINARY",
    "geometry": "BINARY",
}
_INTEGER_DIGITS = {"SMALLINT": 5, "INT": 10, "BIGINT": 20}
_WIDENING = {
    ("SMALLINT", "INT"),
    ("SMALLINT", "BIGINT"),
    ("INT", "BIGINT"),
    ("SMALLINT", "DOUBLE"),
    ("INT", "DOUBLE"),
    ("FLOAT", "DOUBLE"),
    ("DATE", "TIMESTAMP_NTZ"),
}
_DECIMAL = re.compile(r"^DECIMAL\((\d+),(\d+)\)$")


def spark_type(column: CapturedColumn) -> str:
    """The Spark type a captured column is read as (other CLR types: BINARY)."""
    name = column.data_type.lower()
    if name in ("decimal", "numeric"):
        return f"DECIMAL({column.precision or 18},{column.scale or 0})"
    return _SIMPLE.get(name, "BINARY")


def _decimal(type_text: str) -> tuple[int, int] | None:
    match = _DECIMAL.match(type_text)
    return (int(match.group(1)), int(match.group(2))) if match else None


def holds(new: str, old: str) -> bool:
    """Whether Spark type ``new`` holds every value of ``old`` (docs/reference/bronze-schema.md,
    "Type map")."""
    if new == old or (old, new) in _WIDENING:
        return True
    new_dec, old_dec = _decimal(new), _decimal(old)
    if new_dec is not None and old in _INTEGER_DIGITS:
        return new_dec[0] - new_dec[1] >= _INTEGER_DIGITS[old]
    if new_dec is not None and old_dec is not None:
        return new_dec[0] - new_dec[1] >= old_dec[0] - old_dec[1] and new_dec[1] >= old_dec[1]
    return False


def union_columns(
    instances: Sequence[tuple[str, Sequence[CapturedColumn], set[str]]],
) -> list[Column]:
    """The union by name of the captured columns of ``instances`` (oldest first): each entry
    is ``(capture instance, captured columns, computed column names)``.

    Runs on the driver, once when the schema is inferred. Computed columns are left out with a
    WARNING. A column typed differently takes the newer type when it holds the older one.

    Raises
    ------
    SchemaChangedError
        Two instances type a column incompatibly.
    """
    by_name: dict[str, Column] = {}
    order: list[str] = []
    origin: dict[str, str] = {}
    computed_seen: list[str] = []
    for instance, columns, computed in instances:
        lowered_computed = {c.lower() for c in computed}
        for col in columns:
            key = col.name.lower()
            if key in lowered_computed:
                if col.name not in computed_seen:
                    computed_seen.append(col.name)
                continue
            new = Column(col.name, spark_type(col), True, col.data_type)
            old = by_name.get(key)
            if old is None:
                by_name[key] = new
                order.append(key)
            elif old.spark_type != new.spark_type:
                if not holds(new.spark_type, old.spark_type):
                    raise SchemaChangedError(
                        f"Capture instances {origin[key]!r} and {instance!r} capture column "
                        f"{col.name!r} as {old.spark_type} and {new.spark_type}; leave it out "
                        "with the columns option or disable the older capture instance"
                    )
                by_name[key] = new
            origin[key] = instance
    if computed_seen:
        log.warning(
            "computed column(s) %s left out of the schema: CDC stores NULL for them in every "
            "change row (compute them downstream, or name them in the columns option)",
            ", ".join(computed_seen),
        )
    return [by_name[k] for k in order]


_DDL_ITEM = re.compile(r"^\s*(`(?:[^`]|``)+`|[^\s`]+)\s+(.+?)\s*$", re.S)
_TYPE_ALIASES = {
    "INTEGER": "INT",
    "LONG": "BIGINT",
    "SHORT": "SMALLINT",
    "BOOL": "BOOLEAN",
    "REAL": "FLOAT",
    "TIMESTAMP_LTZ": "TIMESTAMP",
    "DEC": "DECIMAL",
    "NUMERIC": "DECIMAL",
    "BYTE": "TINYINT",
}
_DECLARABLE = frozenset(
    {
        "BOOLEAN",
        "TINYINT",
        "SMALLINT",
        "INT",
        "BIGINT",
        "FLOAT",
        "DOUBLE",
        "DATE",
        "TIMESTAMP",
        "TIMESTAMP_NTZ",
        "STRING",
        "BINARY",
    }
)


def _split_top_level(text: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    depth, quoted = 0, False
    for ch in text:
        if ch == "`":
            quoted = not quoted
        elif not quoted and ch in "(<":
            depth += 1
        elif not quoted and ch in ")>":
            depth -= 1
        elif ch == "," and depth == 0 and not quoted:
            parts.append("".join(current))
            current = []
            continue
        current.append(ch)
    parts.append("".join(current))
    return [p for p in parts if p.strip()]


def _normalize_type(option_value: str, raw: str) -> tuple[str, bool]:
    text = re.sub(r"\s+", " ", raw.strip().upper())
    nullable = True
    if text.endswith(" NOT NULL"):
        text, nullable = text[: -len(" NOT NULL")].strip(), False
    text = re.sub(r"\s*COMMENT\s+'.*$", "", text)
    match = re.match(r"^([A-Z_]+)\s*(?:\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?$", text)
    if match:
        base = _TYPE_ALIASES.get(match.group(1), match.group(1))
        if base == "DECIMAL":
            return f"DECIMAL({match.group(2) or 10},{match.group(3) or 0})", nullable
        if base in ("VARCHAR", "CHAR"):
            return "STRING", nullable
        if base in _DECLARABLE and match.group(2) is None:
            return base, nullable
    raise ValueError(
        f"Option 'columns' has the value {option_value!r}; the type {raw.strip()!r} is not "
        "allowed: use BOOLEAN, TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, DECIMAL(p,s), "
        "DATE, TIMESTAMP, TIMESTAMP_NTZ, STRING or BINARY"
    )


def declared_columns(option_value: str) -> list[Column]:
    """The captured columns the ``columns`` option declares (Spark DDL, e.g.
    ``order_id INT, amount DECIMAL(18,2)``).

    Raises
    ------
    ValueError
        The text is not a list of ``name TYPE`` items of supported types, or names a column
        twice.
    """
    out: list[Column] = []
    seen: set[str] = set()
    for item in _split_top_level(option_value):
        match = _DDL_ITEM.match(item)
        if match is None:
            raise ValueError(
                f"Option 'columns' has the value {option_value!r}; allowed: Spark DDL such as "
                "'order_id INT, status STRING, amount DECIMAL(18,2)'"
            )
        name = match.group(1)
        if name.startswith("`"):
            name = name[1:-1].replace("``", "`")
        if name.lower() in seen:
            raise ValueError(f"Option 'columns' names the column {name!r} twice")
        seen.add(name.lower())
        type_text, nullable = _normalize_type(option_value, match.group(2))
        out.append(Column(name, type_text, nullable))
    if not out:
        raise ValueError("Option 'columns' is empty; give Spark DDL such as 'id INT, name STRING'")
    return out


def output_columns(captured: Sequence[Column], *, include_command_id: bool) -> list[Column]:
    """The metadata columns, then ``captured``.

    Raises
    ------
    ValueError
        A captured column is named like a metadata or sink column (ignoring case).
    """
    for col in captured:
        if col.name.lower() in RESERVED_NAMES:
            raise ValueError(
                f"The source column {col.name!r} has the name of a column mssql-cdc adds "
                f"({', '.join(sorted(RESERVED_NAMES))}); leave it out with the columns option"
            )
    metadata = [c for c in METADATA_COLUMNS if include_command_id or c.name != "_command_id"]
    return [*metadata, *captured]


def ddl(columns: Sequence[Column]) -> str:
    """``columns`` as a Spark DDL schema string."""
    parts = []
    for c in columns:
        quoted = "`" + c.name.replace("`", "``") + "`"
        parts.append(f"{quoted} {c.spark_type}{'' if c.nullable else ' NOT NULL'}")
    return ", ".join(parts)
