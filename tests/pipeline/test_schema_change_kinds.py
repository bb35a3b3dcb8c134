"""Each kind of DDL on a captured table, through real Spark and Delta (docs/schema-changes.md):
a widening the query holds, a dropped column and a NOT NULL change go on with events; INT to
BIGINT fails a running query before reading and recovers with type widening on bronze; a change
bronze cannot take (INT to NVARCHAR) fails with the message; schemaChangePolicy=fail fails on any
DDL. Each availableNow run is a new query, whose schema is inferred when it starts."""

from __future__ import annotations

import pytest

from mssql_cdc import is_schema_changed, stream


def run(spark, source, tmp_path, **options):
    query = stream(spark, source.options(**options)).to_delta(
        str(tmp_path / "bronze"),
        app_id="orders-v1",
        checkpoint=str(tmp_path / "cp"),
        facts_table=str(tmp_path / "facts"),
        trigger={"availableNow": True},
    )
    query.awaitTermination()


def events(spark, tmp_path):
    df = spark.read.format("delta").load(str(tmp_path / "facts")).where("event IS NOT NULL")
    return [(r["event"], r["detail"]) for r in df.orderBy("min_lsn").collect()]


def bronze(spark, tmp_path):
    return spark.read.format("delta").load(str(tmp_path / "bronze")).orderBy("_start_lsn")


def test_a_widening_a_dropped_column_and_not_null_go_on_with_events(spark, source, tmp_path):
    source.sql("INSERT INTO dbo.orders VALUES (1, N'a', 1)")
    source.scan()
    run(spark, source, tmp_path)
    source.sql("ALTER TABLE dbo.orders ALTER COLUMN name nvarchar(50) NULL")
    source.sql("INSERT INTO dbo.orders VALUES (2, N'a name longer than twenty', 2)")
    source.sql("ALTER TABLE dbo.orders ALTER COLUMN qty int NOT NULL")
    source.sql("ALTER TABLE dbo.orders DROP COLUMN name")
    source.sql("INSERT INTO dbo.orders (id, qty) VALUES (3, 3)")
    source.scan()
    run(spark, source, tmp_path)
    rows = [(r["id"], r["name"], r["qty"]) for r in bronze(spark, tmp_path).collect()]
    assert rows == [(1, "a", 1), (2, "a name longer than twenty", 2), (3, None, 3)]
    found = events(spark, tmp_path)
    assert [e for e, _ in found] == ["schema_change"] * 3
    assert "nvarchar(50)" in found[0][1].lower()
    assert "not null" in found[1][1].lower()
    assert "drop column" in found[2][1].lower()


def test_int_to_bigint_fails_before_reading_and_type_widening_on_bronze_recovers(
    spark, source, tmp_path
):
    source.sql("INSERT INTO dbo.orders VALUES (1, N'a', 1)")
    source.scan()
    query = stream(spark, source.options()).to_delta(
        str(tmp_path / "bronze"),
        app_id="orders-v1",
        checkpoint=str(tmp_path / "cp"),
        facts_table=str(tmp_path / "facts"),
        trigger={"processingTime": "1 second"},
    )
    query.processAllAvailable()
    source.sql("ALTER TABLE dbo.orders ALTER COLUMN qty bigint NULL")
    source.sql("INSERT INTO dbo.orders VALUES (2, N'b', 5000000000)")
    source.scan()
    # the running query reads qty as INT: its batch fails before reading, not as a cast error
    with pytest.raises(Exception, match=r"qty BIGINT \(read as INT\)") as info:
        query.processAllAvailable()
    assert is_schema_changed(info.value)
    assert "delta.enableTypeWidening" in str(info.value)
    assert bronze(spark, tmp_path).count() == 1  # nothing read
    # the restart re-infers BIGINT; bronze without type widening cannot take it
    with pytest.raises(Exception, match="cannot take the new one") as info:
        run(spark, source, tmp_path)
    assert is_schema_changed(info.value)
    spark.sql(
        f"ALTER TABLE delta.`{tmp_path / 'bronze'}` "
        "SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true')"
    )
    run(spark, source, tmp_path)
    df = bronze(spark, tmp_path)
    assert dict(df.dtypes)["qty"] == "bigint"
    assert [(r["id"], r["qty"]) for r in df.collect()] == [(1, 1), (2, 5000000000)]
    assert [e for e, _ in events(spark, tmp_path)] == ["schema_change"]


def test_a_change_bronze_cannot_take_fails_with_the_message(spark, source, tmp_path):
    source.sql("INSERT INTO dbo.orders VALUES (1, N'a', 1)")
    source.scan()
    run(spark, source, tmp_path)
    source.sql("ALTER TABLE dbo.orders ALTER COLUMN qty nvarchar(20) NULL")
    source.sql("INSERT INTO dbo.orders VALUES (2, N'b', N'two')")
    source.scan()
    # a new run infers STRING; bronze's INT column cannot take it, even with type widening
    with pytest.raises(Exception, match="cannot take the new one") as info:
        run(spark, source, tmp_path)
    assert is_schema_changed(info.value)
    assert "write the stream to a new bronze table" in str(info.value)
    assert bronze(spark, tmp_path).count() == 1


def test_schema_change_policy_fail_fails_on_any_ddl_until_restarted_with_classify(
    spark, source, tmp_path
):
    source.sql("INSERT INTO dbo.orders VALUES (1, N'a', 1)")
    source.scan()
    run(spark, source, tmp_path, schemaChangePolicy="fail")
    source.sql("ALTER TABLE dbo.orders ADD note nvarchar(10) NULL")
    source.sql("INSERT INTO dbo.orders (id, name, qty, note) VALUES (2, N'b', 2, N'x')")
    source.scan()
    with pytest.raises(Exception, match="and schemaChangePolicy=fail") as info:
        run(spark, source, tmp_path, schemaChangePolicy="fail")
    assert is_schema_changed(info.value)
    run(spark, source, tmp_path)  # once with classify
    assert [r["id"] for r in bronze(spark, tmp_path).collect()] == [1, 2]
    assert [e for e, _ in events(spark, tmp_path)] == ["schema_change"]
