"""``CREATE TABLE IF NOT EXISTS ... USING delta`` in SQL, with column and table comments and
table properties: what works on classic Spark, on Spark Connect without Delta's Connect plugin
and on Databricks alike (ADR 0061). Runs on the driver."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "columns_ddl",
    "create_table_sql",
    "quote_identifier",
    "run_alter_properties",
    "run_create_table",
    "sql_string",
]


def quote_identifier(name: str) -> str:
    """``name`` as a back-quoted SQL identifier."""
    return "`" + name.replace("`", "``") + "`"


def sql_string(text: str) -> str:
    """``text`` as a SQL string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _type_sql(data_type: Any) -> str:  # noqa: ANN401  # a str or a Spark DataType
    """A column type as SQL: a string as it is, a Spark ``DataType`` with every nested field
    name quoted (``simpleString()`` leaves them bare, which breaks on odd names)."""
    if isinstance(data_type, str):
        return data_type
    from pyspark.sql.types import ArrayType, MapType, StructType

    if isinstance(data_type, StructType):
        fields = ", ".join(
            f"{quote_identifier(f.name)}: {_type_sql(f.dataType)}" for f in data_type.fields
        )
        return f"STRUCT<{fields}>"
    if isinstance(data_type, ArrayType):
        return f"ARRAY<{_type_sql(data_type.elementType)}>"
    if isinstance(data_type, MapType):
        return f"MAP<{_type_sql(data_type.keyType)}, {_type_sql(data_type.valueType)}>"
    return str(data_type.simpleString())


def columns_ddl(columns: Sequence[tuple[str, Any, str | None]]) -> str:
    """``(name, type, comment)`` columns as the column list of a DDL statement (``name TYPE
    COMMENT '...'``, names quoted), which ``CREATE TABLE`` and a schema string both take."""
    cols = []
    for name, data_type, column_comment in columns:
        col = f"{quote_identifier(name)} {_type_sql(data_type)}"
        if column_comment is not None:
            col += f" COMMENT {sql_string(column_comment)}"
        cols.append(col)
    return ", ".join(cols)


def _properties_sql(properties: dict[str, str]) -> str:
    """``'key' = 'value', ...``: the inside of ``TBLPROPERTIES (...)``."""
    return ", ".join(f"{sql_string(k)} = {sql_string(v)}" for k, v in properties.items())


def create_table_sql(
    table_sql: str,
    columns: Sequence[tuple[str, Any, str | None]],
    comment: str,
    properties: dict[str, str],
) -> str:
    """The statement that creates the table ``table_sql`` (a name or ``delta.`<path>```)
    unless it exists.

    Args:
        columns: ``(name, type, comment)``; ``type`` a SQL type string or a Spark ``DataType``.
    """
    statement = f"CREATE TABLE IF NOT EXISTS {table_sql} ({columns_ddl(columns)}) USING delta"
    statement += f" COMMENT {sql_string(comment)}"
    if properties:
        statement += f" TBLPROPERTIES ({_properties_sql(properties)})"
    return statement


def run_create_table(
    spark: SparkSession,
    table_sql: str,
    columns: Sequence[tuple[str, Any, str | None]],
    comment: str,
    properties: dict[str, str],
) -> None:
    """Runs :func:`create_table_sql`."""
    spark.sql(create_table_sql(table_sql, columns, comment, properties))


def run_alter_properties(spark: SparkSession, table_sql: str, properties: dict[str, str]) -> None:
    """Sets ``properties`` on the table ``table_sql`` (``comment``: the table comment) in one
    ``ALTER TABLE ... SET TBLPROPERTIES``."""
    spark.sql(f"ALTER TABLE {table_sql} SET TBLPROPERTIES ({_properties_sql(properties)})")
