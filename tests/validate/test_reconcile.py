"""``reconcile()`` in local Spark and Delta against the test server: MATCH on a clean copy, each
injected difference found with its failure type and key, IN_FLIGHT (not MISMATCH) for changes
silver has not applied, the report table's rows, a NULL key component named, a date key, a type
2 silver compared by its current rows, and the canonical row text."""

from __future__ import annotations

import hashlib
import json

import pytest

from mssql_cdc import reconcile, stream


def _lsn(source) -> str:
    value = source.sql("SELECT sys.fn_cdc_get_max_lsn() AS m")[0]["m"]
    return "0x" + value.hex().upper()


def _copy(spark, source, tmp_path, options, name="orders"):
    """Bronze with a snapshot of the table, silver built from it, and silver's control row at
    the snapshot's LSN (what apply_changes leaves after its first call)."""
    bronze, silver, control = (str(tmp_path / f"{name}_{t}") for t in ("b", "s", "c"))
    offset = stream(spark, options).snapshot(bronze)
    captured = [c for c in spark.read.format("delta").load(bronze).columns if not c.startswith("_")]
    (
        spark.read.format("delta")
        .load(bronze)
        .select(*captured, "_start_lsn", "_commit_ts")
        .write.format("delta")
        .save(silver)
    )
    _position(spark, control, silver, offset["lsn"])
    return {"bronze": bronze, "silver": silver, "control_table": control}


def _position(spark, control: str, silver: str, lsn: str) -> None:
    """Silver's control row at ``lsn``, written by the sink's control writer."""
    from mssql_cdc.sink.control import (
        SilverPosition,
        ensure_control_table,
        merge_silver_position,
    )
    from mssql_cdc.sink.tables import table_ref

    ref = table_ref(control, "control_table")
    ensure_control_table(spark, ref)
    merge_silver_position(spark, ref, SilverPosition(silver, lsn, lsn, None))


def _fill(source, rows: int) -> None:
    values = ", ".join(f"({i}, N'n{i}', {i * 10})" for i in range(1, rows + 1))
    source.sql(f"INSERT INTO dbo.orders VALUES {values}")
    source.scan()


def _key_rows(result):
    rows = result.report.where("key IS NOT NULL").orderBy("key").collect()
    return [(r["key"], r["failure_type"], json.loads(r["detail"])) for r in rows]


def test_match_then_each_injected_difference_then_in_flight(spark, source, tmp_path):  # noqa: PLR0915
    _fill(source, 50)
    options = source.options()
    tables = _copy(spark, source, tmp_path, options)
    report = str(tmp_path / "report")

    clean = reconcile(spark, options, **tables, bucket_rows=10, sample=1.0, report_table=report)
    assert (clean.buckets, clean.match, clean.in_flight, clean.mismatch) == (5, 5, 0, 0)
    assert clean.hashed == 5
    assert clean.failures == {}
    assert clean.silver_lsn == clean.source_lsn == _lsn(source)
    buckets = clean.report.orderBy("source_key_sum").collect()
    assert [(b["bucket_lo"], b["bucket_hi"]) for b in buckets] == [
        (None, "11"),
        ("11", "21"),
        ("21", "31"),
        ("31", "41"),
        ("41", None),
    ]
    assert [(b["source_rows"], b["silver_rows"]) for b in buckets] == [(10, 10)] * 5
    assert [int(b["source_key_sum"]) for b in buckets] == [55, 155, 255, 355, 455]
    assert all(b["source_key_sum"] == b["silver_key_sum"] for b in buckets)
    assert {b["status"] for b in buckets} == {"MATCH"}

    # silver loses id 3, gains id 1000 and has another name for id 17
    silver = tables["silver"]
    spark.sql(f"DELETE FROM delta.`{silver}` WHERE id = 3")
    spark.sql(f"UPDATE delta.`{silver}` SET name = 'changed' WHERE id = 17")
    spark.sql(
        f"INSERT INTO delta.`{silver}` SELECT 1000, 'extra', 1, _start_lsn, _commit_ts "
        f"FROM delta.`{silver}` WHERE id = 1"
    )
    found = reconcile(spark, options, **tables, bucket_rows=10, sample=1.0, report_table=report)
    assert (found.match, found.in_flight, found.mismatch) == (2, 0, 3)
    assert found.failures == {"MISSING_TARGET": 1, "MISSING_SOURCE": 1, "RECORD_DIFF": 1}
    lsn = clean.source_lsn
    assert _key_rows(found) == [
        ('{"id": 1000}', "MISSING_SOURCE", {"silver_start_lsn": lsn, "columns": []}),
        ('{"id": 17}', "RECORD_DIFF", {"silver_start_lsn": lsn, "columns": ["name"]}),
        ('{"id": 3}', "MISSING_TARGET", {"silver_start_lsn": None, "columns": []}),
    ]
    statuses = {
        (r["bucket_lo"], r["bucket_hi"]): r["status"]
        for r in found.report.where("key IS NULL").collect()
    }
    assert statuses == {
        (None, "11"): "MISMATCH",
        ("11", "21"): "MISMATCH",
        ("21", "31"): "MATCH",
        ("31", "41"): "MATCH",
        ("41", None): "MISMATCH",
    }
    # without the sample only the buckets whose counts differ are hashed: the changed name in
    # a bucket of equal counts is not seen
    counted = reconcile(spark, options, **tables, bucket_rows=10, sample=0)
    assert (counted.hashed, counted.mismatch, counted.failures) == (
        2,
        2,
        {"MISSING_TARGET": 1, "MISSING_SOURCE": 1},
    )

    # the report table holds both runs: bucket rows and key rows as the results did
    stored = spark.read.format("delta").load(report)
    assert stored.select("run_id").distinct().count() == 2
    assert stored.count() == 5 + 5 + 3
    key_row = stored.where("key = '{\"id\": 17}'").first()
    assert key_row["run_id"] == found.run_id
    assert key_row["silver_version"] == found.silver_version
    assert key_row["status"] is None
    assert key_row["hashed"] is None
    assert (key_row["bucket_lo"], key_row["bucket_hi"]) == ("11", "21")
    assert key_row["source_lsn"] == lsn

    # changes silver has not applied: id 25 updated (in bronze, beyond applied_lsn) and id 51
    # inserted (still only in the change table): IN_FLIGHT, not MISMATCH
    spark.sql(f"DELETE FROM delta.`{silver}` WHERE id = 1000")
    spark.sql(f"UPDATE delta.`{silver}` SET name = 'n17' WHERE id = 17")
    spark.sql(
        f"INSERT INTO delta.`{silver}` SELECT 3, 'n3', 30, _start_lsn, _commit_ts "
        f"FROM delta.`{silver}` WHERE id = 1"
    )
    source.sql("UPDATE dbo.orders SET qty = 7 WHERE id = 25")
    source.scan()
    update_lsn = _lsn(source)
    bronze = tables["bronze"]
    from pyspark.sql import functions as sf

    (
        spark.read.format("delta")
        .load(bronze)
        .where("id = 25")
        .withColumn("_operation", sf.lit(4))
        .withColumn("_start_lsn", sf.lit(update_lsn))
        .withColumn("_snapshot", sf.lit(None).cast("string"))
        .withColumn("qty", sf.lit(7))
        .write.format("delta")
        .mode("append")
        .save(bronze)
    )
    source.sql("INSERT INTO dbo.orders VALUES (51, N'n51', 510)")
    source.scan()
    flying = reconcile(spark, options, **tables, bucket_rows=10, sample=1.0)
    # id 51 makes a sixth bucket (41..50 reach bucket_rows): (None, 11) ... [51, None)
    assert (flying.buckets, flying.match, flying.in_flight, flying.mismatch) == (6, 4, 2, 0)
    assert flying.failures == {"IN_FLIGHT": 2}
    assert _key_rows(flying) == [
        (
            '{"id": 25}',
            "IN_FLIGHT",
            {"silver_start_lsn": lsn, "columns": ["qty"], "found": "RECORD_DIFF"},
        ),
        (
            '{"id": 51}',
            "IN_FLIGHT",
            {"silver_start_lsn": None, "columns": [], "found": "MISSING_TARGET"},
        ),
    ]


def test_type_2_silver_is_compared_by_its_current_rows(spark, source, tmp_path):
    _fill(source, 6)
    options = source.options()
    tables = _copy(spark, source, tmp_path, options)
    history = str(tmp_path / "history")
    spark.sql(
        f"CREATE TABLE delta.`{history}` USING delta AS SELECT *, _commit_ts AS `__START_AT`, "
        f"CAST(NULL AS TIMESTAMP_NTZ) AS `__END_AT` FROM delta.`{tables['silver']}`"
    )
    # an older, closed version of id 2 with other values
    spark.sql(
        f"INSERT INTO delta.`{history}` SELECT id, 'old', 0, _start_lsn, _commit_ts, "
        f"`__START_AT`, `__START_AT` FROM delta.`{history}` WHERE id = 2"
    )
    lsn = _lsn(source)
    _position(spark, tables["control_table"], history, lsn)
    result = reconcile(
        spark,
        options,
        history,
        bronze=tables["bronze"],
        control_table=tables["control_table"],
        sample=1.0,
    )
    assert (result.buckets, result.match, result.hashed, result.failures) == (1, 1, 1, {})
    assert result.silver_lsn == lsn


def test_null_key_component_is_named_and_a_date_key_is_ranged(spark, source, tmp_path):
    source.sql("CREATE TABLE dbo.codes (id int NOT NULL PRIMARY KEY, code nvarchar(10), v int)")
    source.sql("CREATE TABLE dbo.days (d date NOT NULL PRIMARY KEY, v int)")
    for table in ("codes", "days"):
        source.sql(
            f"EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N'{table}', "
            "@role_name = NULL"
        )
    source.sql("INSERT INTO dbo.codes VALUES (1, N'a', 1), (2, NULL, 2), (3, N'c', 3)")
    source.sql(
        "INSERT INTO dbo.days VALUES ('2024-01-01', 1), ('2024-01-02', 2), ('2024-01-03', 3), "
        "('1969-12-31', 4)"
    )
    source.scan()

    codes = source.options(captureInstance="dbo_codes")
    tables = _copy(spark, source, tmp_path, codes, "codes")
    spark.sql(f"DELETE FROM delta.`{tables['silver']}` WHERE code IS NULL")
    result = reconcile(spark, codes, **tables, keys=["code"], sample=0)
    assert (result.buckets, result.mismatch, result.hashed) == (1, 1, 1)
    bucket = result.report.where("key IS NULL").first()
    assert (bucket["bucket_lo"], bucket["bucket_hi"], bucket["source_key_sum"]) == (None,) * 3
    assert (bucket["source_rows"], bucket["silver_rows"]) == (3, 2)
    assert _key_rows(result) == [
        ('{"code": null}', "MISSING_TARGET", {"silver_start_lsn": None, "columns": []})
    ]

    days = source.options(captureInstance="dbo_days")
    tables = _copy(spark, source, tmp_path, days, "days")
    spark.sql(f"DELETE FROM delta.`{tables['silver']}` WHERE d = DATE'2024-01-03'")
    result = reconcile(spark, days, **tables, bucket_rows=2, sample=0)
    buckets = result.report.where("key IS NULL").orderBy("source_key_sum").collect()
    assert [(b["bucket_lo"], b["bucket_hi"], b["status"]) for b in buckets] == [
        (None, '"2024-01-02"', "MATCH"),
        ('"2024-01-02"', None, "MISMATCH"),
    ]
    # day numbers: 1969-12-31 is -1, 2024-01-01 is 19723
    assert [int(b["source_key_sum"]) for b in buckets] == [19722, 19724 + 19725]
    assert int(buckets[1]["silver_key_sum"]) == 19724
    assert _key_rows(result) == [
        ('{"d": "2024-01-03"}', "MISSING_TARGET", {"silver_start_lsn": None, "columns": []})
    ]


def test_bad_arguments_are_refused_before_any_read(spark, source, tmp_path):
    options = source.options()
    args = {"bronze": str(tmp_path / "b"), "control_table": str(tmp_path / "c")}
    with pytest.raises(ValueError, match="sample must be from 0 to 1"):
        reconcile(spark, options, str(tmp_path / "s"), **args, sample=1.5)
    with pytest.raises(ValueError, match="bucket_rows must be an integer >= 1"):
        reconcile(spark, options, str(tmp_path / "s"), **args, bucket_rows=0)
    _fill(source, 2)
    tables = _copy(spark, source, tmp_path, options)
    with pytest.raises(ValueError, match=r"keys: 'nope' is not a captured column of 'dbo_orders'"):
        reconcile(spark, options, **tables, keys=["nope"])


def test_canonical_text_is_equal_for_equal_values_and_unambiguous(spark):
    from pyspark.sql import functions as sf

    from mssql_cdc.validate.row_hash import row_hash, row_text

    df = spark.sql(
        "SELECT CAST(-0.0 AS DOUBLE) AS a, CAST(0.0 AS DOUBLE) AS b, 'a' AS s1, 'bc' AS s2, "
        "'ab' AS s3, 'c' AS s4, CAST(NULL AS STRING) AS n, '' AS e, "
        "CAST(1.5 AS DECIMAL(5,2)) AS m, X'0A' AS x, DATE'2024-01-02' AS d, "
        "TIMESTAMP_NTZ'2024-01-02 03:04:05.123456' AS t"
    )
    types = {f.name: f.dataType for f in df.schema.fields}

    def text(*names):
        return row_text([(sf.col(n), types[n]) for n in names])

    row = df.select(
        text("a").alias("neg"),
        text("b").alias("pos"),
        text("s1", "s2").alias("split1"),
        text("s3", "s4").alias("split2"),
        text("n").alias("null"),
        text("e").alias("empty"),
        text("m", "x", "d", "t").alias("typed"),
        row_hash([(sf.col("s1"), types["s1"])]).alias("h"),
    ).first()
    assert row["neg"] == row["pos"] == "V3:0.0"
    assert row["split1"] != row["split2"]
    assert (row["null"], row["empty"]) == ("N", "V0:")
    assert row["typed"] == "V4:1.50V2:0AV10:2024-01-02V26:2024-01-02 03:04:05.123456"
    assert row["h"] == hashlib.sha256(b"V1:a").hexdigest()
