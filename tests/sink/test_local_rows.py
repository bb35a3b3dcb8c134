"""``local_rows.rows_frame``: the facts rows the driver builds, handed to Spark as one Arrow
table (ADR 0181), give the schema and values ``createDataFrame`` from tuples gives."""

from __future__ import annotations

import enum
import math
from datetime import datetime, timezone

import pytest

from mssql_cdc.sink.facts import BatchCounts, BatchRow, EventRow, FoldedMetrics, facts_row
from mssql_cdc.sink.local_rows import rows_frame
from mssql_cdc.sink.schemas import FACTS, TableKind

WHEN = datetime(2026, 12, 3, 23, 59, 58, 123456)  # naive UTC, microseconds kept


def _rows() -> list[tuple[object, ...]]:
    """A batch row with every metric set, one with most left NULL, and event rows."""
    full = facts_row(
        BatchRow(
            batch_id=2**62,
            counts=BatchCounts(
                rows=3,
                min_lsn="0x0000002A000001F00003",
                max_lsn="0x0000002A000001F80004",
                min_commit_ts=datetime(1753, 1, 1),
                max_commit_ts=datetime(9999, 12, 31, 23, 59, 59, 997000),
                deletes=1,
                inserts=1,
                updates=1,
            ),
            metrics=FoldedMetrics(
                source_rtt_ms=0.25,
                read_seconds=1e-9,
                read_mb=123456.789,
                network_wait_ms=-1,
                retention_watermark_ts=WHEN,
                retention_headroom_hours=71.5,
                source_max_commit_ts=WHEN,
                capture_lag_seconds=0.0,
                ingestion_lag_seconds=float("inf"),
                end_lsn="0x0000002A000001F80004",
                end_commit_ts=WHEN,
                warnings=["a warning, with ünïcödé"],
            ),
            started_at=WHEN,
            duration_ms=0,
        ),
        app_id="orders",
        target="main.sales.orders_bronze",
        written_at=WHEN,
    )
    empty = facts_row(
        BatchRow(
            batch_id=0,
            counts=BatchCounts(rows=0),
            metrics=FoldedMetrics(),
            started_at=WHEN,
            duration_ms=7,
        ),
        app_id="orders",
        target="/Volumes/main/raw/bronze",
        written_at=WHEN,
    )
    events = [
        facts_row(e, app_id="orders", target="/Volumes/main/raw/bronze", written_at=WHEN)
        for e in EventRow.from_files(
            0,
            [
                {
                    "kind": "data_skipped",
                    "from": "0x00000029000000100001",
                    "commit_ts": "2026-12-03T10:00:00+01:00",
                    "lost_from_ts": "2026-12-01T00:00:00Z",
                    "lost_to_ts": "2026-12-02T00:00:00",
                },
                {
                    "kind": "schema_change",
                    "lsn": "0x0000002A000000100001",
                    "commit_ts": "2026-12-03T10:00:01.5Z",
                },
            ],
        )
    ]
    return [full, empty, *events]


@pytest.mark.parametrize("zone", ["UTC", "Asia/Kolkata"])
def test_the_arrow_frame_equals_the_one_from_tuples(any_spark, zone):
    spark = any_spark
    rows = _rows()
    assert len(rows) == 4
    before = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", zone)  # TIMESTAMP_NTZ: no zone applies
    try:
        ours = rows_frame(spark, FACTS, rows)
        theirs = spark.createDataFrame(rows, FACTS.ddl)
        assert ours.schema == theirs.schema
        assert ours.collect() == theirs.collect()
    finally:
        spark.conf.set("spark.sql.session.timeZone", before)
    first = ours.collect()[0]
    assert first["batch_id"] == 2**62
    assert first["max_commit_ts"] == datetime(9999, 12, 31, 23, 59, 59, 997000)
    assert first["written_at"] == WHEN
    assert first["ingestion_lag_seconds"] == float("inf")
    assert [r["event"] for r in ours.collect()] == [None, None, "data_skipped", "schema_change"]
    assert ours.collect()[2]["min_commit_ts"] == datetime(2026, 12, 3, 9, 0, 0)
    assert rows_frame(spark, FACTS, []).count() == 0


@pytest.mark.parametrize("records", ["0", "-1"])
def test_no_limit_on_arrow_batches_still_makes_the_frame(spark, records):
    """``maxRecordsPerBatch`` 0 or less means no limit, which PySpark's Arrow-table path hands
    to pyarrow as a batch size it refuses: the frame is then made from the tuples."""
    from mssql_cdc.sink.local_rows import MAX_RECORDS_PER_BATCH

    rows = _rows()
    before = spark.conf.get(MAX_RECORDS_PER_BATCH)
    spark.conf.set(MAX_RECORDS_PER_BATCH, records)
    try:
        assert rows_frame(spark, FACTS, rows).collect() == (
            spark.createDataFrame(rows, FACTS.ddl).collect()
        )
    finally:
        spark.conf.set(MAX_RECORDS_PER_BATCH, before)


def test_rows_are_read_once_and_nan_and_lone_surrogates_are_kept_as_spark_writes_them(spark):
    row = list(_rows()[1])
    row[FACTS.names.index("read_mb")] = float("nan")
    row[FACTS.names.index("detail")] = "a\ud800b"  # UTF-8 cannot carry it: U+FFFD, as from tuples
    row[FACTS.names.index("read_seconds")] = 3  # an int in a DOUBLE column: exact
    (got,) = rows_frame(spark, FACTS, (r for r in [tuple(row)])).collect()
    assert math.isnan(got["read_mb"])
    assert got["detail"] == "a\ufffdb"
    assert spark.createDataFrame([("a\ud800b",)], "s STRING").first()["s"] == "a\ufffdb"
    assert got["read_seconds"] == 3.0


class _Kind(str, enum.Enum):
    SCHEMA_CHANGE = "schema_change"


@pytest.mark.parametrize(
    ("column", "value", "what"),
    [
        ("rows", "three", "str"),
        ("rows", 1.5, "float"),
        ("rows", True, "bool"),
        ("rows", 2**63, "int"),
        ("read_mb", True, "bool"),
        ("read_mb", 2**53 + 1, "int"),
        ("event", _Kind.SCHEMA_CHANGE, "_Kind"),
        ("event", b"schema_change", "bytes"),
        ("written_at", datetime(2026, 12, 3, tzinfo=timezone.utc), "an aware datetime"),
        ("written_at", "2026-12-03", "str"),
    ],
)
def test_a_value_its_column_does_not_take_is_named_before_spark_is_asked(column, value, what):
    row = list(_rows()[0])
    row[FACTS.names.index(column)] = value
    with pytest.raises(TypeError, match=rf"facts column '{column}' \(\w+\) cannot take {what}"):
        rows_frame(None, FACTS, [row])  # type: ignore[arg-type]


def test_a_bad_row_or_kind_is_named_before_spark_is_asked():
    row = list(_rows()[0])
    with pytest.raises(ValueError, match="a facts row has 28 values for 29 columns"):
        rows_frame(None, FACTS, [row[:-1]])  # type: ignore[arg-type]
    other = TableKind("other", (("id", "DECIMAL(38,0)", "c"),), {"id": "c"}, "t", 1)
    with pytest.raises(ValueError, match="other column 'id' has type DECIMAL\\(38,0\\)"):
        rows_frame(None, other, [(1,)])  # type: ignore[arg-type]
