"""Reconcile's row hashes (docs/validation.md, "How rows are compared"): one canonical text per
Spark type, so equal values hash equal on both sides.

Both sides are hashed by Spark: the source rows as the snapshot reader returns them (cast to
silver's column types first), silver's rows as stored. A column's canonical text:

* string: the value; integers: decimal digits; boolean: ``true``/``false``;
* decimal: plain digits at the column's scale (``1.50`` in ``decimal(5,2)``);
* float/double: Spark's shortest round-trip text, ``-0.0`` as ``0.0``, ``NaN``, ``Infinity``;
* binary: upper-case hex;
* date: ``yyyy-MM-dd``; ``timestamp_ntz``: ``yyyy-MM-dd HH:mm:ss.SSSSSS``; ``timestamp``
  (with time zone): microseconds since the epoch (the session time zone cannot change it);
* anything else (arrays, structs, maps): its JSON.

A row's text joins its columns in a fixed order, each ``N`` for NULL or ``V<length>:<text>``,
so no two different rows give the same text; the hash is SHA-256 of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pyspark.sql import functions as sf
from pyspark.sql import types as st

if TYPE_CHECKING:
    from pyspark.sql import Column

__all__ = ["canonical_text", "row_hash", "row_text"]


def canonical_text(column: Column, data_type: st.DataType) -> Column:  # noqa: PLR0911 (a rule per type)
    """The canonical text of ``column`` (of ``data_type``); NULL stays NULL."""
    if isinstance(data_type, st.StringType):
        return column
    if isinstance(data_type, (st.FloatType, st.DoubleType)):
        return sf.when(column == 0, sf.lit("0.0")).otherwise(column.cast("string"))
    if isinstance(data_type, st.BinaryType):
        return sf.hex(column)
    if isinstance(data_type, st.DateType):
        return sf.date_format(column, "yyyy-MM-dd")
    if isinstance(data_type, st.TimestampNTZType):
        return sf.date_format(column, "yyyy-MM-dd HH:mm:ss.SSSSSS")
    if isinstance(data_type, st.TimestampType):
        return sf.unix_micros(column).cast("string")
    if isinstance(data_type, (st.ArrayType, st.MapType, st.StructType)):
        return sf.to_json(column)
    return column.cast("string")


def row_text(columns: Sequence[tuple[Column, st.DataType]]) -> Column:
    """The canonical text of a row: each column ``N`` or ``V<length>:<text>``, in order."""
    parts = []
    for column, data_type in columns:
        text = canonical_text(column, data_type)
        parts.append(
            sf.when(text.isNull(), sf.lit("N")).otherwise(
                sf.concat(sf.lit("V"), sf.length(text).cast("string"), sf.lit(":"), text)
            )
        )
    return sf.concat_ws("", *parts) if parts else sf.lit("")


def row_hash(columns: Sequence[tuple[Column, st.DataType]]) -> Column:
    """SHA-256 (hex) of :func:`row_text`."""
    return sf.sha2(row_text(columns), 256)
