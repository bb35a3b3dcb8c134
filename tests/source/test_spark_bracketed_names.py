"""Capture instances whose names need brackets, through the product in real local Spark: a
table ``dbo.[Order Details]`` (a space) and ``Ventes.[Café]`` (non-ASCII letters), with key and
value columns that need brackets too. The stream source reads every change exactly once across
runs, and the snapshot source (keyset partitions, so the key bounds are quoted as well) reads
the current rows."""

from __future__ import annotations

import pytest

import mssql_cdc

TABLES = [
    # (schema, table, key column, value column)
    ("dbo", "Order Details", "Order ID", "Unit Price"),
    ("Ventes", "Café", "Numéro", "Quantité"),
]


def quoted(name: str) -> str:
    return "[" + name.replace("]", "]]") + "]"


def qualified(schema: str, table: str) -> str:
    return f"{quoted(schema)}.{quoted(table)}"


def history(source, instance: str, key: str, value: str) -> list[tuple[object, ...]]:
    """The change table's rows (update before-images too) in commit order."""
    rows = source.sql(
        f"SELECT __$start_lsn AS l, __$seqval AS s, __$operation AS o, {quoted(key)} AS k, "
        f"{quoted(value)} AS v FROM cdc.{quoted(instance + '_CT')} "
        "ORDER BY __$start_lsn, __$command_id, __$seqval, __$operation"
    )
    return [
        ("0x" + r["l"].hex().upper(), "0x" + r["s"].hex().upper(), r["o"], r["k"], r["v"])
        for r in rows
    ]


def workload(source, first: int) -> None:
    for schema, table, key, value in TABLES:
        name = qualified(schema, table)
        k, v = quoted(key), quoted(value)
        source.sql(f"INSERT INTO {name} ({k}, {v}) VALUES ({first}, 1), ({first + 1}, 2)")
        source.sql(f"UPDATE {name} SET {v} = {v} + 10 WHERE {k} = {first}")
        source.sql(
            f"BEGIN TRAN; INSERT INTO {name} ({k}, {v}) VALUES ({first + 2}, 3); "
            f"DELETE FROM {name} WHERE {k} = {first + 1}; COMMIT TRAN"
        )
    source.scan()


def stream(spark, source, instance: str, checkpoint, output) -> list[object]:
    """One availableNow run into a parquet directory; returns everything it holds."""
    mssql_cdc.register(spark)
    df = (
        spark.readStream.format("mssql_cdc")
        .options(**source.options(captureInstance=instance, maxCommitsPerBatch="2"))
        .load()
    )
    query = (
        df.writeStream.format("parquet")
        .option("path", str(output))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    return spark.read.parquet(str(output)).collect()


@pytest.fixture
def named_tables(source):
    source.sql("CREATE SCHEMA [Ventes]")
    for schema, table, key, value in TABLES:
        source.sql(
            f"CREATE TABLE {qualified(schema, table)} "
            f"({quoted(key)} int NOT NULL PRIMARY KEY, {quoted(value)} int)"
        )
        source.sql(
            f"EXEC sys.sp_cdc_enable_table @source_schema = N'{schema}', "
            f"@source_name = N'{table}', @role_name = NULL"
        )
    return source


@pytest.mark.parametrize("names", TABLES, ids=["order-details", "ventes-cafe"])
def test_stream_reads_every_change_of_a_bracketed_capture_instance_once(
    spark, named_tables, tmp_path, names
):
    source = named_tables
    schema, table, key, value = names
    instance = f"{schema}_{table}"  # sys.sp_cdc_enable_table's default name
    workload(source, 1)
    checkpoint, output = tmp_path / "cp", tmp_path / "out"
    first = stream(spark, source, instance, checkpoint, output)
    expected = history(source, instance, key, value)
    assert len(expected) == 6  # 2 inserts, update (before + after), insert, delete
    columns = ["_start_lsn", "_seqval", "_operation", key, value]
    got = sorted(tuple(r[c] for c in columns) for r in first)
    assert got == sorted(expected)
    assert {r["_capture_instance"] for r in first} == {instance}

    workload(source, 100)  # the second run resumes from the checkpoint: only the new changes
    both = stream(spark, source, instance, checkpoint, output)
    everything = history(source, instance, key, value)
    assert len(everything) == 12
    got_all = sorted(tuple(r[c] for c in columns) for r in both)
    assert got_all == sorted(everything)  # every change, none twice


@pytest.mark.parametrize("names", TABLES, ids=["order-details", "ventes-cafe"])
def test_snapshot_reads_the_rows_of_a_bracketed_table(spark, named_tables, names):
    source = named_tables
    schema, table, key, value = names
    name = qualified(schema, table)
    source.sql(
        f"INSERT INTO {name} ({quoted(key)}, {quoted(value)}) VALUES "
        + ", ".join(f"({i}, {i * 10})" for i in range(30))
    )
    source.sql(f"DELETE FROM {name} WHERE {quoted(key)} = 7")
    source.scan()
    mssql_cdc.register(spark)
    df = (
        spark.read.format("mssql_cdc_snapshot")
        .options(**source.options(captureInstance=f"{schema}_{table}", numPartitions="3"))
        .load()
    )
    assert df.rdd.getNumPartitions() == 3
    rows = df.collect()
    assert sorted((r[key], r[value]) for r in rows) == [(i, i * 10) for i in range(30) if i != 7]
    assert {r["_operation"] for r in rows} == {0}
