"""Delta tables named by a catalog name or a path: parsing, existence, reads, idempotent
appends, creation with comments and Delta's recorded transaction versions.

Everything here runs on the driver. A table reference is a catalog name (``bronze.orders``) or a
path: ``delta.`/data/orders``` or anything with ``/`` or ``:`` in it (``/data/orders``,
``s3://bucket/orders``), (docs/sink.md).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from delta.tables import DeltaTable
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

__all__ = ["TableRef", "columns_of", "create_table", "table_ref", "txn_version"]

from mssql_cdc.sink.ddl import run_create_table
from mssql_cdc.sink.txn_ids import has_delta_log, recorded_txn_version

log = logging.getLogger("mssql_cdc.sink")

#: characters Delta refuses in column names unless column mapping is on
_MAPPING_CHARS = frozenset(" ,;{}()\n\t=")


@dataclass(frozen=True)
class TableRef:
    """A Delta table: exactly one of ``name`` (catalog) and ``path`` is set.

    ``text`` is what the caller passed; it is what the facts ``target`` and the control table's
    ``table_name`` record.
    """

    text: str
    name: str | None = None
    path: str | None = None

    @property
    def sql(self) -> str:
        """The table in SQL: the name, or ``delta.`<path>```."""
        if self.path is not None:
            return "delta.`" + self.path.replace("`", "``") + "`"
        assert self.name is not None
        return self.name

    @property
    def catalog_name(self) -> str:
        """The catalog name (only for a table given by name)."""
        assert self.name is not None
        return self.name

    def exists(self, spark: SparkSession) -> bool:
        """True when the table exists (a path: holds a Delta log)."""
        if self.path is not None:
            # the log listed afresh, not DeltaTable.isDeltaTable (Delta's Connect plugin, whose
            # answer a Connect server's plan cache can serve stale): ADR 0060
            return has_delta_log(spark, self.path)
        return bool(spark.catalog.tableExists(self.catalog_name))

    def read(self, spark: SparkSession) -> DataFrame:
        """The table's current rows."""
        if self.path is not None:
            return spark.read.format("delta").load(self.path)
        return spark.read.table(self.sql)

    def append(
        self, df: DataFrame, app_id: str, version: int, metadata: str, *, merge_schema: bool
    ) -> None:
        """Appends ``df`` in one commit carrying ``SetTransaction(app_id, version)``; Delta
        skips it silently when ``version`` is not above the one recorded for ``app_id``."""
        writer = (
            df.write.format("delta")
            .mode("append")
            .option("txnAppId", app_id)
            .option("txnVersion", version)
            .option("userMetadata", metadata)
        )
        if merge_schema:
            writer = writer.option("mergeSchema", "true")
        if self.path is not None:
            writer.save(self.path)
        else:
            writer.saveAsTable(self.catalog_name)

    def delta_table(self, spark: SparkSession) -> DeltaTable:
        """``delta.tables.DeltaTable`` for this table."""
        from delta.tables import DeltaTable

        if self.path is not None:
            return DeltaTable.forPath(spark, self.path)
        return DeltaTable.forName(spark, self.catalog_name)


def table_ref(text: str, what: str) -> TableRef:
    """Parses a table argument.

    Args:
        text: catalog name, ``delta.`<path>``` or a path.
        what: the argument's name, for the error message.

    Raises:
        TypeError: ``text`` is not a string.
        ValueError: ``text`` is empty or an unterminated ``delta.``` form.
    """
    if not isinstance(text, str):
        raise TypeError(f"{what} must be a table name or path (str), got {type(text).__name__}")
    stripped = text.strip()
    if not stripped:
        raise ValueError(f"{what} is empty; give a table name (db.table) or a path")
    if stripped.lower().startswith("delta.`"):
        if not stripped.endswith("`") or len(stripped) <= len("delta.``"):
            raise ValueError(f"{what} {text!r}: expected delta.`<path>`")
        return TableRef(text, path=stripped[len("delta.`") : -1].replace("``", "`"))
    if "/" in stripped or ":" in stripped:
        return TableRef(text, path=stripped)
    return TableRef(text, name=stripped)


def create_table(
    spark: SparkSession,
    ref: TableRef,
    columns: Sequence[tuple[str, Any, str | None]],
    comment: str,
    properties: dict[str, str],
) -> None:
    """Creates the table unless it exists (a lost creation race adopts the winner's table).

    Args:
        columns: ``(name, type, comment)``; ``type`` a SQL type string or a Spark ``DataType``.
        comment: the table comment.
        properties: table properties; ``delta.columnMapping.mode=name`` is added when a column
            name needs it (spaces, ``,;{}()=``).
    """
    props = dict(properties)
    if any(_MAPPING_CHARS.intersection(name) for name, _, _ in columns):
        props.update(
            {
                "delta.columnMapping.mode": "name",
                "delta.minReaderVersion": "2",
                "delta.minWriterVersion": "5",
            }
        )
    # SQL, not DeltaTable.createIfNotExists: no Delta Connect plugin needed (ADR 0061)
    run_create_table(spark, ref.sql, columns, comment, props)
    log.info("created Delta table %s", ref.text)


def columns_of(schema: StructType, comments: dict[str, str]) -> list[tuple[str, Any, str | None]]:
    """``(name, DataType, comment)`` of every field of ``schema``, comments looked up by name."""
    return [(f.name, f.dataType, comments.get(f.name)) for f in schema.fields]


def txn_version(spark: SparkSession, ref: TableRef, app_id: str) -> int | None:
    """The last ``txnVersion`` Delta recorded for ``app_id`` on the table.

    Returns:
        The version; ``-1`` when the table does not exist or holds none for ``app_id``. Read
        through Delta's JVM classes where they are reachable, else from the ``_delta_log``
        files through Spark (``sink.txn_ids``, ADR 0060); never ``None`` any more.
    """
    location = ref.path
    if location is None:
        if not ref.exists(spark):
            return -1
        detail = spark.sql(f"DESCRIBE DETAIL {ref.sql}").first()
        assert detail is not None
        location = detail["location"]
    return recorded_txn_version(spark, location, app_id)
