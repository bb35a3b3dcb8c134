"""A table whose creation a crash interrupted: Delta makes ``_delta_log`` (and
``_staged_commits`` in it) before it writes the first commit, and ``CREATE TABLE IF NOT
EXISTS`` then takes the directory for a table and does nothing, so every later read or write
failed with ``DELTA_TABLE_NOT_FOUND`` and the stream could never start again (found by the
fault harness, seed 6073: a driver killed while it created the control table). The one way
tables are created (``tables.ensure_table``) creates it again, with its comments and
properties."""

from __future__ import annotations

import pytest
from pyspark.sql.types import LongType, StringType, StructField, StructType

from mssql_cdc.sink.schemas import BRONZE, CONTROL, FACTS, SCHEMA_VERSION_PROPERTY
from mssql_cdc.sink.tables import ensure_table, table_ref


def _interrupted(path):
    (path / "_delta_log" / "_staged_commits").mkdir(parents=True)
    return table_ref(str(path), "table")


@pytest.mark.parametrize("kind", [CONTROL, FACTS], ids=["control", "facts"])
def test_a_declared_table_is_created_over_an_empty_log(spark, tmp_path, kind):
    ref = _interrupted(tmp_path / kind.kind)
    assert not ref.exists(spark)
    ensure_table(spark, ref, kind)
    assert ref.exists(spark)
    detail = spark.sql(f"DESCRIBE DETAIL {ref.sql}").first()
    assert detail["description"] == kind.comment
    assert detail["properties"][SCHEMA_VERSION_PROPERTY] == str(kind.schema_version)
    fields = ref.read(spark).schema.fields
    assert [f.name for f in fields] == [name for name, _, _ in kind.columns]
    comments = {f.name: f.metadata.get("comment") for f in fields}
    assert comments == {name: comment for name, _, comment in kind.columns}
    assert ref.read(spark).count() == 0


def test_bronze_is_created_over_an_empty_log_with_column_mapping(spark, tmp_path):
    """A bronze table with a column Delta refuses without column mapping (a space) gets it, as
    a normal creation does."""
    ref = _interrupted(tmp_path / "bronze")
    schema = StructType(
        [
            StructField("Unit Price", LongType()),
            StructField("_batch_id", LongType()),
            StructField("_snapshot", StringType()),
        ]
    )
    ensure_table(spark, ref, BRONZE, schema)
    detail = spark.sql(f"DESCRIBE DETAIL {ref.sql}").first()
    assert detail["properties"]["delta.columnMapping.mode"] == "name"
    assert detail["description"] == BRONZE.comment
    fields = {f.name: f.metadata.get("comment") for f in ref.read(spark).schema.fields}
    assert list(fields) == ["Unit Price", "_batch_id", "_snapshot"]
    assert fields["_batch_id"] == BRONZE.column_comments["_batch_id"]
    assert fields["Unit Price"] is None
