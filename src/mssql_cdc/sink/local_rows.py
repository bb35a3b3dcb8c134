"""Rows the driver builds (a micro-batch's facts row and event rows) as a Spark ``DataFrame``,
handed to Spark as one Arrow table (ADR 0181).

On classic Spark, ``SparkSession.createDataFrame(list_of_tuples, ddl)`` checks and pickles each
row in Python, parallelizes the pickles as an RDD and unpickles them in the JVM, so the append
that follows runs a scan of that RDD. From a ``pyarrow.Table`` with the declared schema classic
Spark makes a local relation of Arrow batches instead (PySpark's ``createDataFrame`` accepts
``pyarrow.Table`` since Spark 4.0, classic and Connect; Connect sent tuples as Arrow already):
a one-row facts commit took 0.86 times as long on Spark 4.2 and 0.56 times on Spark 4.0
(docs/performance.md, "The facts rows handed to Spark as Arrow").

Runs on the driver (on Spark Connect, in the ``foreachBatch`` worker). Each value is checked
against its column's type as strictly as classic ``createDataFrame`` checks tuples, so nothing
is converted silently: ``None`` is NULL, a ``BIGINT`` takes an ``int``, a ``DOUBLE`` a
``float`` (or an ``int``, exactly), a ``STRING`` a ``str`` and a ``TIMESTAMP_NTZ`` a naive
``datetime`` (a wall-clock time; the facts hold UTC). A string with a lone surrogate, which
UTF-8 cannot carry, gets U+FFFD in its place, as Spark makes of it from tuples.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import DataType

    from mssql_cdc.sink.schemas import TableKind

__all__ = ["LOCAL_TYPES", "MAX_RECORDS_PER_BATCH", "rows_frame"]

#: the declared column types :func:`rows_frame` sends as Arrow (the ones the facts table uses)
LOCAL_TYPES = ("STRING", "BIGINT", "DOUBLE", "TIMESTAMP_NTZ")


def _types(sql_type: str) -> tuple[pa.DataType, DataType]:
    """The Arrow and Spark types of a declared column type; ``KeyError`` for another one."""
    import pyarrow as pa
    from pyspark.sql import types as st

    return {
        "STRING": (pa.string(), st.StringType()),
        "BIGINT": (pa.int64(), st.LongType()),
        "DOUBLE": (pa.float64(), st.DoubleType()),
        "TIMESTAMP_NTZ": (pa.timestamp("us"), st.TimestampNTZType()),
    }[sql_type]


#: the Spark setting whose value PySpark hands to ``pyarrow.Table.to_batches`` on classic Spark
MAX_RECORDS_PER_BATCH = "spark.sql.execution.arrow.maxRecordsPerBatch"


def _fits(value: object, sql_type: str) -> bool:
    """Whether ``value`` (not ``None``) is what a column of ``sql_type`` takes: as strictly as
    classic ``createDataFrame`` checks tuples (no bool for a number, no str subclass, no float
    for an integer), but for an ``int`` in a ``DOUBLE``, taken when the double holds it exactly."""
    if sql_type == "BIGINT":
        return type(value) is int and -(2**63) <= value < 2**63
    if sql_type == "DOUBLE":
        return type(value) is float or (type(value) is int and abs(value) <= 2**53)
    if sql_type == "STRING":
        return type(value) is str
    return type(value) is datetime and value.tzinfo is None


def _column(name: str, sql_type: str, values: list[Any], arrow_type: pa.DataType) -> pa.Array:
    import pyarrow as pa

    for value in values:
        if value is not None and not _fits(value, sql_type):
            what = "an aware datetime" if isinstance(value, datetime) else type(value).__name__
            raise TypeError(f"column {name!r} ({sql_type}) cannot take {what}: {value!r:.80}")
    try:
        return pa.array(values, type=arrow_type)
    except UnicodeEncodeError:  # a lone surrogate: U+FFFD in its place, as Spark makes it
        return pa.array([None if v is None else _replace_surrogates(v) for v in values], arrow_type)


def _replace_surrogates(text: str) -> str:
    """``text`` with each lone surrogate (which UTF-8 cannot carry) replaced by U+FFFD."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _arrow_allowed(spark: SparkSession) -> bool:
    """False on classic Spark with ``maxRecordsPerBatch`` 0 or less ("no limit"): PySpark's
    ``pyarrow.Table`` path hands it to ``to_batches``, which refuses it (4.0-4.2)."""
    if getattr(spark, "_jvm", None) is None:  # Spark Connect: another path, no such limit
        return True
    try:
        return int(str(spark.conf.get(MAX_RECORDS_PER_BATCH, "10000"))) > 0
    except ValueError:
        return False


def rows_frame(spark: SparkSession, kind: TableKind, rows: Iterable[Sequence[Any]]) -> DataFrame:
    """A ``DataFrame`` of ``rows`` with ``kind``'s declared columns, made from one Arrow table.

    Args:
        kind: the table's declaration (``schemas.FACTS``); its columns give the names, types
            (all nullable) and order.
        rows: tuples in ``kind``'s column order (read once).

    Returns:
        The ``DataFrame``, with the schema and values ``createDataFrame(rows, kind.ddl)``
        gives. Where classic Spark's Arrow path cannot run (``maxRecordsPerBatch`` 0 or less),
        the values are still checked here and the frame is made from the tuples.

    Raises:
        ValueError: a row whose length is not the number of columns, or a column type outside
            :data:`LOCAL_TYPES` (a programming error: a kind this is not for).
        TypeError: a value its column does not take (see the module doc), named by column.
    """
    import pyarrow as pa
    from pyspark.sql.types import StructField, StructType

    table_rows = [tuple(row) for row in rows]
    width = len(kind.columns)
    for row in table_rows:
        if len(row) != width:
            raise ValueError(f"a {kind.kind} row has {len(row)} values for {width} columns")
    arrays: list[pa.Array] = []
    fields: list[StructField] = []
    for i, (name, declared, _) in enumerate(kind.columns):
        sql_type = declared.upper()
        try:
            arrow_type, spark_type = _types(sql_type)
        except KeyError:
            raise ValueError(
                f"{kind.kind} column {name!r} has type {declared}, which rows_frame does not "
                f"send as Arrow (it sends {', '.join(LOCAL_TYPES)})"
            ) from None
        try:
            arrays.append(_column(name, sql_type, [row[i] for row in table_rows], arrow_type))
        except TypeError as exc:
            raise TypeError(f"{kind.kind} {exc}") from None
        fields.append(StructField(name, spark_type, nullable=True))
    if not _arrow_allowed(spark):
        return spark.createDataFrame(table_rows, kind.ddl)
    table = pa.Table.from_arrays(arrays, names=[f.name for f in fields])
    return spark.createDataFrame(table, schema=StructType(fields))
