"""Result rows kept as Arrow, and their TDS encoding in C.

A SELECT's rows come from the engine as an Arrow table (:class:`ArrowRows`); Python tuples are
made only if some code asks for them (a fault that cuts a reply after N rows, a scalar
subquery). :func:`encode_rows` turns the table into ROW tokens with the native library's
encoder (``mssql_cdc._native.encode_rows``, docs/adr/0085-c-row-encoder.md), about 20 times as
fast as the per-value Python encoder in :mod:`mssql_cdc.emulator.protocol.types`. That encoder
stays for the values of
``text``, ``ntext``, ``image``, ``xml`` and ``sql_variant`` columns and of ``char``/``varchar``
columns holding non-ASCII text in a code-page collation (the C encoder copies the bytes it
made), for rows that are not Arrow, and for any result the C encoder declines (date/time text
outside the canonical forms, a value out of range: the Python encoder then raises the error
SQL Server would send).
"""

from __future__ import annotations

import codecs
import logging
import struct
import uuid
from collections.abc import Iterator, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, overload

import pyarrow as pa
import pyarrow.compute as pc

from mssql_cdc import _native
from mssql_cdc.emulator.protocol.types import MAX, SqlType, encode_value, wire_collation
from mssql_cdc.errors import MssqlCdcError

if TYPE_CHECKING:
    from mssql_cdc.emulator.protocol.tokens import Column

__all__ = ["ArrowRows", "column_spec", "encode_rows"]

log = logging.getLogger("mssql_cdc.emulator.protocol.arrowrows")

# mc_enc_kind (native/include/mssqlcdc/tds_encode.h)
_INT, _BIT, _FLOAT, _DECIMAL, _MONEY, _GUID, _BINARY, _ROWVERSION, _NCHAR, _CHAR = range(1, 11)
_RAW = 17
_TEMPORAL = {
    "date": 11,
    "time": 12,
    "datetime2": 13,
    "datetimeoffset": 14,
    "datetime": 15,
    "smalldatetime": 16,
}
_INT_SIZES = {"tinyint": 1, "smallint": 2, "int": 4, "bigint": 8}

#: (kind, nullable, plp, utf8, size, precision, scale, width), as encode_rows takes it
Spec = tuple[int, int, int, int, int, int, int, int]


def _decimal_size(precision: int) -> int:
    return 5 if precision <= 9 else 9 if precision <= 19 else 13 if precision <= 28 else 17


def column_spec(t: SqlType, nullable: bool) -> Spec | None:  # noqa: PLR0911 (a dispatch over kinds)
    """The C encoder's description of a column, or None for a type it does not encode."""
    null = int(nullable)
    name = t.name
    if name in _INT_SIZES:
        return (_INT, null, 0, 0, _INT_SIZES[name], 0, 0, 0)
    if name == "bit":
        return (_BIT, null, 0, 0, 1, 0, 0, 0)
    if name in ("real", "float"):
        return (_FLOAT, null, 0, 0, 4 if name == "real" else 8, 0, 0, 0)
    if name in ("money", "smallmoney"):
        return (_MONEY, null, 0, 0, 8 if name == "money" else 4, 0, 4, 0)
    if name in ("decimal", "numeric"):
        return (_DECIMAL, null, 0, 0, _decimal_size(t.precision), t.precision, t.scale, 0)
    if name == "uniqueidentifier":
        return (_GUID, null, 0, 0, 16, 0, 0, 0)
    if name in _TEMPORAL:
        return (_TEMPORAL[name], null, 0, 0, 0, 0, t.scale, 0)
    if name == "rowversion":
        return (_ROWVERSION, null, 0, 0, 8, 0, 0, 0)
    plp = int(t.length == MAX)
    if name in ("binary", "varbinary"):
        width = t.length if name == "binary" and not plp else 0
        return (_BINARY, null, plp, 0, 0, 0, 0, width)
    if name in ("nchar", "nvarchar"):
        width = t.length * 2 if name == "nchar" and not plp else 0
        return (_NCHAR, null, plp, 0, 0, 0, 0, width)
    if name in ("char", "varchar"):
        coll = wire_collation(t)
        try:
            codecs.lookup(coll.codec)
        except LookupError:
            return None
        width = t.length if name == "char" and not plp else 0
        return (_CHAR, null, plp, int(coll.utf8), 0, 0, 0, width)
    return None  # text, ntext, image, xml, sql_variant: the Python encoder


class ArrowRows(Sequence[tuple[object, ...]]):
    """The rows of an engine result as an Arrow table; tuples are made on first use.

    ``engine_types`` are the engine's column type names: UUID and HUGEINT columns come out of
    Arrow as strings and decimals, and are turned into what the engine's own fetch returns.
    """

    def __init__(self, table: pa.Table, engine_types: Sequence[str]) -> None:
        self.table = table
        self.engine_types = [t.upper() for t in engine_types]
        self._rows: list[tuple[object, ...]] | None = None

    def column(self, i: int) -> list[object]:
        values: list[object] = self.table.column(i).to_pylist()
        kind = self.engine_types[i] if i < len(self.engine_types) else ""
        if kind == "UUID":
            values = [None if v is None else uuid.UUID(str(v)) for v in values]
        elif kind in ("HUGEINT", "UHUGEINT"):
            values = [int(v) if isinstance(v, Decimal) else v for v in values]
        return values

    def null_count(self, i: int) -> int:
        return int(self.table.column(i).null_count)

    @property
    def rows(self) -> list[tuple[object, ...]]:
        if self._rows is None:
            columns = [self.column(i) for i in range(self.table.num_columns)]
            self._rows = list(zip(*columns, strict=True)) if columns else []
        return self._rows

    def __len__(self) -> int:
        return int(self.table.num_rows)

    @overload
    def __getitem__(self, index: int) -> tuple[object, ...]: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[tuple[object, ...]]: ...
    def __getitem__(self, index: int | slice) -> tuple[object, ...] | Sequence[tuple[object, ...]]:
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step == 1:
                return ArrowRows(self.table.slice(start, max(stop - start, 0)), self.engine_types)
            return self.rows[index]
        return self.rows[index]

    def __iter__(self) -> Iterator[tuple[object, ...]]:
        return iter(self.rows)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ArrowRows):
            return self.rows == other.rows
        if isinstance(other, Sequence):
            return self.rows == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


def _ascii(column: pa.ChunkedArray) -> bool:
    if not pa.types.is_string(column.type) and not pa.types.is_large_string(column.type):
        return True  # the C encoder refuses it with a clear reason
    return bool(pc.all(pc.string_is_ascii(column)).as_py() in (True, None))


def encode_rows(columns: Sequence[Column], rows: Sequence[tuple[object, ...]]) -> bytes | None:
    """The ROW tokens of ``rows`` from the C encoder, or None when the Python encoder must
    encode them (rows not held as Arrow, a type or a value the C encoder does not take)."""
    if not isinstance(rows, ArrowRows) or rows.table.num_columns != len(columns):
        return None
    table = rows.table
    specs: list[Spec] = []
    for i, col in enumerate(columns):
        spec = column_spec(col.type, col.nullable)
        if spec is not None and spec[0] == _CHAR and not spec[3] and not _ascii(table.column(i)):
            spec = None  # text in a code page: Python's codecs encode it
        if spec is None:
            # a type the C encoder does not know: its values are encoded here, then copied
            try:
                raw = [encode_value(col.type, v, nullable=col.nullable) for v in rows.column(i)]
            except (ValueError, OverflowError, TypeError, struct.error):
                return None  # the Python encoder raises the error SQL Server would send
            table = table.set_column(i, table.field(i).name, pa.array(raw, pa.binary()))
            spec = (_RAW, 0, 0, 0, 0, 0, 0, 0)
        specs.append(spec)
    parts = []
    for batch in table.to_batches():
        try:
            parts.append(_native.encode_rows(specs, batch))
        except (MssqlCdcError, ValueError, OverflowError) as exc:
            log.debug("rows left to the Python encoder: %s", exc)
            return None
    return b"".join(parts)
