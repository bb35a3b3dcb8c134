"""A new path bronze table is created by its first append (``tables.create_by_append``, ADR
0213): the same table ``CREATE TABLE`` and an append give (columns, types, comments, table
comment, properties), its first commit under the batch's transaction (a replay is skipped),
and the ``CREATE TABLE`` way kept where the append cannot create it alike."""

from __future__ import annotations

import json

import pytest
from _changes import change, changes
from pyspark.sql.types import LongType, StructField, StructType

from mssql_cdc.sink.bronze import BronzeTable, with_sink_columns
from mssql_cdc.sink.ledger import ids, metadata
from mssql_cdc.sink.schemas import BRONZE, SCHEMA_VERSION_PROPERTY
from mssql_cdc.sink.tables import create_by_append, ensure_table, table_ref


def _rows(spark):
    return with_sink_columns(
        changes(spark, [change(5, 2, 1, "a"), change(6, 4, 1, "b")]), batch_id=0, snapshot=None
    )


def _table(spark, path):
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{path}`").first()
    schema = spark.read.format("delta").load(str(path)).schema
    return schema.json(), detail["description"], detail["properties"]


def test_a_new_bronze_table_created_by_its_first_append_is_the_one_create_table_gives(
    spark, tmp_path
):
    rows = _rows(spark)
    txn, meta = ids.micro_batch("orders", 0), metadata.batch("orders", 0)
    declared = table_ref(str(tmp_path / "declared"), "target")
    ensure_table(spark, declared, BRONZE, rows.schema)
    declared.append(rows, txn, meta, merge_schema=True)

    appended = str(tmp_path / "appended")
    seen: set = set()
    BronzeTable(spark, table_ref(appended, "target"), seen=seen).append(rows, txn, meta)
    assert seen == {table_ref(appended, "target")}

    assert _table(spark, appended) == _table(spark, tmp_path / "declared")
    schema_json, description, properties = _table(spark, appended)
    assert description == BRONZE.comment
    assert properties[SCHEMA_VERSION_PROPERTY] == str(BRONZE.schema_version)
    comments = {f["name"]: f["metadata"].get("comment") for f in json.loads(schema_json)["fields"]}
    assert comments["_batch_id"] == BRONZE.column_comments["_batch_id"]
    assert comments["id"] is None
    history = spark.sql(f"DESCRIBE HISTORY delta.`{appended}`").orderBy("version").collect()
    assert [(h.version, h.operation) for h in history] == [
        (0, "WRITE"),
        (1, "SET TBLPROPERTIES"),
    ]
    assert json.loads(history[0].userMetadata) == {"app_id": "orders", "batch_id": 0}

    # the first commit holds the batch's transaction: its replay is skipped by Delta
    BronzeTable(spark, table_ref(appended, "target")).append(rows, txn, meta)
    assert spark.read.format("delta").load(appended).count() == 2


def test_a_table_that_exists_or_needs_column_mapping_is_not_created_by_an_append(spark, tmp_path):
    rows = _rows(spark)
    txn, meta = ids.micro_batch("orders", 0), metadata.batch("orders", 0)
    existing = table_ref(str(tmp_path / "existing"), "target")
    ensure_table(spark, existing, BRONZE, rows.schema)
    assert not create_by_append(spark, existing, BRONZE, rows, txn=txn, metadata=meta)
    assert existing.read(spark).count() == 0

    spaced = spark.createDataFrame(
        [(1, 0)], StructType([StructField("Unit Price", LongType()), StructField("k", LongType())])
    )
    mapped = table_ref(str(tmp_path / "mapped"), "target")
    assert not create_by_append(spark, mapped, BRONZE, spaced, txn=txn, metadata=meta)
    assert not mapped.exists(spark)
    # the bronze writer creates it the CREATE TABLE way, with column mapping
    BronzeTable(spark, mapped).append(spaced, txn, meta)
    detail = spark.sql(f"DESCRIBE DETAIL {mapped.sql}").first()
    assert detail["properties"]["delta.columnMapping.mode"] == "name"
    assert mapped.read(spark).count() == 1


def test_a_catalog_table_is_created_by_create_table(spark, tmp_path):
    """``saveAsTable`` creating a table drops the commit's ``userMetadata``, which the ledger
    reads: a name is created first, then appended to."""
    rows = _rows(spark)
    name = table_ref("bronze_created_by_name", "target")
    spark.sql("DROP TABLE IF EXISTS bronze_created_by_name")
    try:
        txn, meta = ids.micro_batch("orders", 0), metadata.batch("orders", 0)
        assert not create_by_append(spark, name, BRONZE, rows, txn=txn, metadata=meta)
        BronzeTable(spark, name).append(rows, txn, meta)
        history = spark.sql(f"DESCRIBE HISTORY {name.sql}").orderBy("version").collect()
        assert [h.operation for h in history] == ["CREATE TABLE", "WRITE"]
        assert json.loads(history[1].userMetadata) == {"app_id": "orders", "batch_id": 0}
    finally:
        spark.sql("DROP TABLE IF EXISTS bronze_created_by_name")


def test_a_path_whose_creation_a_crash_interrupted_is_created_by_the_append(spark, tmp_path):
    """Delta makes ``_delta_log`` (and ``_staged_commits`` in it) before it writes the first
    commit: the first append writes that commit over the empty directory."""
    path = tmp_path / "interrupted"
    (path / "_delta_log" / "_staged_commits").mkdir(parents=True)
    ref = table_ref(str(path), "target")
    assert not ref.exists(spark)
    rows = _rows(spark)
    BronzeTable(spark, ref).append(rows, ids.micro_batch("orders", 0), metadata.batch("orders", 0))
    assert ref.read(spark).count() == 2
    detail = spark.sql(f"DESCRIBE DETAIL {ref.sql}").first()
    assert detail["description"] == BRONZE.comment


def test_an_append_refused_for_a_metadata_change_under_it_is_made_once_more(
    spark, tmp_path, monkeypatch
):
    """A writer that lost the creation race appends to the winner's table while the winner's
    ``ALTER`` (its comment) lands: Delta refuses the append (its snapshot's metadata changed),
    nothing of it landed, and the bronze writer appends once more under the same transaction."""
    from mssql_cdc.sink import tables

    rows = _rows(spark)
    ref = table_ref(str(tmp_path / "raced"), "target")
    ensure_table(spark, ref, BRONZE, rows.schema)
    real = tables.TableRef.append
    calls: list[int] = []

    def refused_once(self, df, txn, metadata=None, *, merge_schema=False):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError(
                "[DELTA_METADATA_CHANGED] MetadataChangedException: The metadata of the Delta "
                "table has been changed by a concurrent update"
            )
        real(self, df, txn, metadata, merge_schema=merge_schema)

    monkeypatch.setattr(tables.TableRef, "append", refused_once)
    BronzeTable(spark, ref, seen={ref}).append(
        rows, ids.micro_batch("orders", 0), metadata.batch("orders", 0)
    )
    assert len(calls) == 2
    assert ref.read(spark).count() == 2


class _NoJvm:
    """The session as Spark Connect has it: no JVM gateway, Spark's file sources only."""

    def __init__(self, spark) -> None:
        self.read = spark.read


def test_a_location_holding_other_files_is_refused_and_left_as_it_was(spark, tmp_path):
    """An append into a directory of Parquet files would make a Delta table among them (as
    ``CREATE TABLE`` refused): a clear error, nothing written."""
    path = tmp_path / "parquet"
    spark.range(3).write.parquet(str(path))
    before = sorted(p.name for p in path.iterdir())
    ref = table_ref(str(path), "target")
    txn, meta = ids.micro_batch("orders", 0), metadata.batch("orders", 0)
    with pytest.raises(ValueError, match="holds files but no Delta table"):
        BronzeTable(spark, ref).append(_rows(spark), txn, meta)
    assert sorted(p.name for p in path.iterdir()) == before  # no _delta_log made
    assert spark.read.parquet(str(path)).count() == 3

    from mssql_cdc.sink.txn_ids import holds_other_files

    for session in (spark, _NoJvm(spark)):  # classic (Hadoop's listing), and without a JVM
        assert holds_other_files(session, str(path))
        assert not holds_other_files(session, str(tmp_path / "absent"))
    empty_log = tmp_path / "empty-log"
    (empty_log / "_delta_log").mkdir(parents=True)
    assert not holds_other_files(spark, str(empty_log))
