"""The stream and snapshot sources in real local Spark against the emulator."""

from __future__ import annotations

import datetime as dt
import json

import pytest

import mssql_cdc
from mssql_cdc import DataLossError, Lsn
from mssql_cdc.finalization import end_offset_from_progress

COLUMNS = ["_start_lsn", "_seqval", "_operation", "_command_id", "id", "name", "qty"]


def run(spark, source, checkpoint, output, **options):
    """One availableNow run into a parquet directory; returns the query."""
    mssql_cdc.register(spark)
    df = spark.readStream.format("mssql_cdc").options(**source.options(**options)).load()
    query = (
        df.writeStream.format("parquet")
        .option("path", str(output))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    return query


def admission_control() -> bool:
    """Whether this PySpark gives stream readers admission control (4.2+, docs/compatibility.md)."""
    from mssql_cdc.source.datasource import HAS_ADMISSION_CONTROL

    return HAS_ADMISSION_CONTROL


def read_rows(spark, output):
    rows = spark.read.parquet(str(output)).orderBy(
        "_start_lsn", "_command_id", "_seqval", "_operation"
    )
    return rows.collect()


def workload(source, first_id):
    i = first_id
    source.sql(f"INSERT INTO dbo.orders VALUES ({i}, N'a{i}', 1), ({i + 1}, N'b{i}', 2)")
    source.sql(f"UPDATE dbo.orders SET qty = qty + 10 WHERE id = {i}")
    source.sql(
        f"BEGIN TRAN; INSERT INTO dbo.orders VALUES ({i + 2}, N'c{i}', 3); "
        f"UPDATE dbo.orders SET name = N'z' WHERE id = {i + 1}; "
        f"DELETE FROM dbo.orders WHERE id = {i}; COMMIT TRAN"
    )
    source.sql(f"DELETE FROM dbo.orders WHERE id = {i + 2}")
    source.scan()


def test_available_now_reads_the_exact_history_in_batches_and_resumes(spark, source, tmp_path):
    workload(source, 1)
    out, cp, metrics = tmp_path / "out", tmp_path / "cp", tmp_path / "metrics"
    query = run(spark, source, cp, out, maxCommitsPerBatch="2", metricsPath=str(metrics))
    rows = read_rows(spark, out)
    assert [tuple(r[c] for c in COLUMNS) for r in rows] == source.changes()
    assert {r["_capture_instance"] for r in rows} == {"dbo_orders"}
    commits = sorted({r["_start_lsn"] for r in rows})
    batches = [p for p in query.recentProgress if p["numInputRows"] > 0]
    if admission_control():
        assert len(batches) >= 2
    else:  # Spark 4.0/4.1: maxCommitsPerBatch has no effect, one batch up to max_lsn
        assert len(batches) == 1
    bound = 2 if admission_control() else len(commits)
    for progress in batches:
        start = progress["sources"][0]["startOffset"]
        end = end_offset_from_progress(progress)
        assert end is not None
        low = end_offset_from_progress({"sources": [{"endOffset": start}]}) or {"lsn": ""}
        low = low["lsn"]
        assert 1 <= len([c for c in commits if low < c <= end["lsn"]]) <= bound
        raw = progress["sources"][0]["endOffset"]
        assert raw.index("lsn") < raw.index("commit_ts")  # the keys in offset order
        assert end["commit_ts"].endswith("Z")
    times = [r["_commit_ts"] for r in rows]
    assert times == sorted(times)
    parts = [json.loads(p.read_text()) for p in metrics.glob("part-*.json")]
    assert sum(p["rows"] for p in parts) == len(rows)
    last = [p for p in parts if p["last"]]
    assert last
    assert max(p["end_lsn"] for p in last) == commits[-1]
    assert all(p["capture_lag_seconds"] is not None for p in last)
    assert all(p["source_rtt_ms"] is not None and p["read_mb"] > 0 for p in parts)

    workload(source, 100)
    run(spark, source, cp, out, maxCommitsPerBatch="2")
    again = read_rows(spark, out)
    assert [tuple(r[c] for c in COLUMNS) for r in again] == source.changes()


def test_starting_lsn_latest_and_explicit(spark, source, tmp_path):
    workload(source, 1)
    history = source.changes()
    query = run(spark, source, tmp_path / "cp1", tmp_path / "o1", startingLsn="latest")
    assert sum(p["numInputRows"] for p in query.recentProgress) == 0
    assert spark.read.parquet(str(tmp_path / "o1")).count() == 0
    processed = history[2][0]  # the second commit, taken as already processed
    run(spark, source, tmp_path / "cp2", tmp_path / "o2", startingLsn=processed)
    explicit = read_rows(spark, tmp_path / "o2")
    assert [tuple(r[c] for c in COLUMNS) for r in explicit] == [
        c for c in history if c[0] > processed
    ]


def test_fall_back_commit_times_are_utc_in_commit_order(spark, pacific_source, tmp_path):
    src = pacific_source
    emu = src.emulator
    emu.set_clock(dt.datetime(2026, 11, 1, 0, 50), freeze=True)  # PDT, UTC-7
    for i, step in enumerate([dt.timedelta(0), dt.timedelta(minutes=50), dt.timedelta(minutes=30)]):
        emu.advance_clock(step)
        src.sql(f"INSERT INTO dbo.orders VALUES ({i}, N'x', {i})")
        src.scan()
    run(spark, src, tmp_path / "cp", tmp_path / "o")
    rows = read_rows(spark, tmp_path / "o")
    assert [(r["id"], r["_commit_ts"]) for r in rows] == [
        (0, dt.datetime(2026, 11, 1, 7, 50)),
        (1, dt.datetime(2026, 11, 1, 8, 40)),  # 01:40 PDT
        (2, dt.datetime(2026, 11, 1, 9, 10)),  # 01:10 PST, after the clock went back
    ]


def test_purged_changes_fail_the_batch_or_are_skipped(spark, source, emulator, tmp_path):
    source.sql("INSERT INTO dbo.orders VALUES (1, N'old', 1)")
    source.scan()
    source.sql("INSERT INTO dbo.orders VALUES (3, N'kept', 3)")
    source.scan()
    emulator.advance_clock(dt.timedelta(days=2))
    source.sql("INSERT INTO dbo.orders VALUES (2, N'new', 2)")
    source.scan()
    before = source.changes()
    assert emulator.cleanup(retention_minutes=60) > 0
    kept = source.changes()
    assert kept == before[1:]
    assert len(kept) == 2
    stamp = Lsn.parse(before[0][0]).prev()
    with pytest.raises(Exception, match="DataLossError") as info:
        run(spark, source, tmp_path / "cp1", tmp_path / "o1", startingLsn=str(stamp))
    assert "dbo_orders: change data from" in str(info.value)
    assert before[0][0] in str(info.value)
    # Spark wraps it (StreamingQueryException over a Py4J error, class and message as text)
    assert not isinstance(info.value, DataLossError)
    assert mssql_cdc.is_data_loss(info.value)
    assert not mssql_cdc.is_schema_changed(info.value)

    metrics = tmp_path / "m"
    run(
        spark,
        source,
        tmp_path / "cp2",
        tmp_path / "o2",
        startingLsn=str(stamp),
        failOnDataLoss="false",
        metricsPath=str(metrics),
    )
    rows = read_rows(spark, tmp_path / "o2")
    assert [tuple(r[c] for c in COLUMNS) for r in rows] == kept
    events = [json.loads(p.read_text()) for p in metrics.glob("event-data_skipped-*.json")]
    assert len(events) == 1
    assert events[0]["certain"] is True
    assert events[0]["from"] == before[0][0]
    # the facts row's LSN is where the stream resumed: the first LSN past the lost range
    assert mssql_cdc.Lsn.parse(events[0]["lsn"]) == mssql_cdc.Lsn.parse(events[0]["to"]).next()
    assert events[0]["lost_to_ts"]


def test_snapshot_source_reads_current_rows_stamped_with_max_lsn(spark, source):
    source.sql(
        "INSERT INTO dbo.orders VALUES " + ", ".join(f"({i}, N'n{i}', {i})" for i in range(1, 41))
    )
    source.sql("DELETE FROM dbo.orders WHERE id > 30")
    source.scan()
    max_lsn = "0x" + source.sql("SELECT sys.fn_cdc_get_max_lsn() AS m")[0]["m"].hex().upper()
    mssql_cdc.register(spark)
    df = (
        spark.read.format("mssql_cdc_snapshot")
        .options(**source.options(numPartitions="3", lockTimeoutMs="5000"))
        .load()
    )
    assert df.rdd.getNumPartitions() == 3
    rows = sorted(df.collect(), key=lambda r: r["id"])
    assert [(r["id"], r["name"], r["qty"]) for r in rows] == [(i, f"n{i}", i) for i in range(1, 31)]
    assert {(r["_operation"], r["_start_lsn"], r["_seqval"], r["_command_id"]) for r in rows} == {
        (0, max_lsn, None, None)
    }
    assert df.columns[:6] == [
        "_capture_instance",
        "_start_lsn",
        "_seqval",
        "_operation",
        "_command_id",
        "_commit_ts",
    ]
