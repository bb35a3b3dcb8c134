"""delta_sink with real Spark and Delta: exactly once across crashes between its steps, the
rewind check, empty batches, comments and the folded metrics."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta

import pytest
from _changes import T0, PartitionMetrics, change, changes, lsn, reading, write_metrics

from mssql_cdc.sink import delta_sink
from mssql_cdc.sink.delta import DeltaSink
from mssql_cdc.sink.schemas import BRONZE_COLUMN_COMMENTS, FACTS_COLUMNS

BATCH0 = [change(1, 2, 1, "a"), change(2, 2, 2, "b")]
BATCH1 = [change(5, 3, 1, "a"), change(5, 4, 1, "a2"), change(6, 1, 2, "b")]
BATCH2 = [change(8, 2, 3, "c")]


def _parts0() -> list[PartitionMetrics]:
    end = T0 + timedelta(seconds=3)
    return [
        PartitionMetrics(
            lsn(0),
            lsn(1),
            rows=1,
            source_rtt_ms=2.0,
            read_seconds=0.5,
            read_mb=1.0,
            network_wait_ms=3,
        ),
        PartitionMetrics(
            lsn(1),
            lsn(3),
            rows=1,
            source_rtt_ms=4.0,
            read_seconds=0.25,
            read_mb=0.5,
            network_wait_ms=5,
            last=True,
            end_lsn=lsn(3),
            end_commit_ts=end.isoformat() + "Z",
            retention_watermark_ts=(end - timedelta(hours=72)).isoformat() + "Z",
            retention_headroom_hours=72.0,  # the reader's figure (ADR 0171)
            source_max_commit_ts=(end + timedelta(seconds=10)).isoformat() + "Z",
            capture_lag_seconds=4.0,
            warnings=["unknown option 'foo'"],
        ),
    ]


def _part(start: int, end: int, rows: int) -> list[PartitionMetrics]:
    return [
        PartitionMetrics(lsn(start), lsn(end), rows=rows, read_mb=0.25, last=True, end_lsn=lsn(end))
    ]


def _reads(path) -> int:
    return len(list(path.iterdir())) if path.exists() else 0


def test_each_batch_lands_once_when_the_sink_crashes_between_steps(spark, tmp_path, monkeypatch):
    bronze, facts, metrics = str(tmp_path / "bronze"), str(tmp_path / "facts"), str(tmp_path / "m")
    reads = tmp_path / "reads"

    def batch(rows, parts, n):
        return reading(spark, rows, metrics, parts, reads_dir=str(reads / str(n)))

    sink = delta_sink(bronze, "orders-v1", facts, metrics_path=metrics)
    # planning (on the driver, before foreachBatch runs) recorded a schema change
    write_metrics(
        metrics,
        [],
        [
            (
                "schema_change",
                "0x05",
                {
                    "lsn": lsn(2),
                    "commit_ts": (T0 + timedelta(seconds=2)).isoformat() + "Z",
                    "detail": "ALTER TABLE x",
                },
            ),
            # and a planning warning (mssql_cdc.source.run_warnings): a line, not a row
            ("warning", "k1", {"message": "computed column(s) total left out of the schema"}),
        ],
    )
    sink(batch(BATCH0, _parts0(), 0), 0)

    # crash after the bronze commit of batch 1, before its facts commit
    def crash(*args, **kwargs):
        raise RuntimeError("driver killed")

    monkeypatch.setattr(DeltaSink, "_append_facts", crash)
    with pytest.raises(RuntimeError, match="driver killed"):
        sink(batch(BATCH1, _part(3, 6, 3), 1), 1)
    monkeypatch.undo()
    restarted = delta_sink(bronze, "orders-v1", facts, metrics_path=metrics)
    restarted(batch(BATCH1, _part(3, 6, 3), 1), 1)  # Spark replays batch 1

    # crash after the facts commit of batch 2, before Spark's commit log entry
    restarted(batch(BATCH2, _part(6, 8, 1), 2), 2)
    again = delta_sink(bronze, "orders-v1", facts, metrics_path=metrics)
    again(batch(BATCH2, _part(6, 8, 1), 2), 2)  # replayed: skipped
    again(batch([], [], 3), 3)  # an empty batch

    got = spark.read.format("delta").load(bronze).orderBy("_start_lsn", "_seqval").collect()
    assert [(r._start_lsn, r._operation, r.id, r.name, r._batch_id) for r in got] == [
        (lsn(1), 2, 1, "a", 0),
        (lsn(2), 2, 2, "b", 0),
        (lsn(5), 3, 1, "a", 1),
        (lsn(5), 4, 1, "a2", 1),
        (lsn(6), 1, 2, "b", 1),
        (lsn(8), 2, 3, "c", 2),
    ]
    assert {(r._snapshot, r._chunk) for r in got} == {(None, None)}

    rows = spark.read.format("delta").load(facts).orderBy("batch_id", "event").collect()
    summary = [
        (r.batch_id, r.event, r.rows, r.deletes, r.inserts, r.updates, r.min_lsn, r.max_lsn)
        for r in rows
    ]
    assert summary == [
        (0, None, 2, 0, 2, 0, lsn(1), lsn(2)),
        (0, "schema_change", 0, 0, 0, 0, lsn(2), lsn(2)),
        (1, None, 3, 1, 0, 1, lsn(5), lsn(6)),
        (2, None, 1, 0, 1, 0, lsn(8), lsn(8)),
        (3, None, 0, 0, 0, 0, None, None),
    ]
    b0, event, b1, _, b3 = rows
    assert (b0.min_commit_ts, b0.max_commit_ts) == (
        T0 + timedelta(seconds=1),
        T0 + timedelta(seconds=2),
    )
    assert (b0.source_rtt_ms, b0.read_seconds, b0.read_mb, b0.network_wait_ms) == (
        3.0,
        0.75,
        1.5,
        8,
    )
    assert (b0.end_lsn, b0.end_commit_ts) == (lsn(3), T0 + timedelta(seconds=3))
    assert b0.retention_watermark_ts == T0 + timedelta(seconds=3) - timedelta(hours=72)
    assert b0.retention_headroom_hours == 72.0
    assert b0.source_max_commit_ts == T0 + timedelta(seconds=13)
    assert (b0.capture_lag_seconds, b0.ingestion_lag_seconds) == (4.0, 10.0)
    # the planning warning first, then the partitions' own; each once
    assert json.loads(b0.detail) == {
        "warnings": ["computed column(s) total left out of the schema", "unknown option 'foo'"]
    }
    assert (event.detail, event.end_lsn, event.min_commit_ts) == (
        "ALTER TABLE x",
        lsn(2),
        T0 + timedelta(seconds=2),
    )
    assert (event.started_at, event.duration_ms) == (None, None)
    assert {r.app_id for r in rows} == {"orders-v1"}
    assert {r.target for r in rows} == {bronze}
    # batch 1's row holds the replay's metrics; the crashed attempt's file was not folded in
    assert (b1.read_mb, b1.end_lsn) == (0.25, lsn(6))
    assert (b3.end_lsn, b3.min_commit_ts, b3.source_rtt_ms, b3.detail) == (None, None, None, None)
    for r in (b0, b1, b3):
        assert r.duration_ms >= 0
        assert r.started_at <= r.written_at
    # one read per attempt (ADR 0090): batch 0 counted before it created bronze, then written;
    # batch 1 crashed once; batch 2's replay was read to check its end
    assert [_reads(reads / str(n)) for n in range(4)] == [2, 2, 2, 1]
    assert list((tmp_path / "m").iterdir()) == []

    history = spark.sql(f"DESCRIBE HISTORY delta.`{bronze}`").orderBy("version").collect()
    appends = [json.loads(h.userMetadata) for h in history if h.operation == "WRITE"]
    # a bronze commit names its batch; its counts are in the facts, observed while it was
    # written (ADR 0090); the empty batch 3 is an empty commit, once the table exists
    assert appends == [{"app_id": "orders-v1", "batch_id": b} for b in range(4)]
    meta = [
        json.loads(h.userMetadata)
        for h in spark.sql(f"DESCRIBE HISTORY delta.`{facts}`").orderBy("version").collect()
        if h.operation == "WRITE"
    ]
    assert [(m["batch_id"], m["rows"], m["app_id"], m["updates"]) for m in meta] == [
        (0, 2, "orders-v1", 0),
        (1, 3, "orders-v1", 1),
        (2, 1, "orders-v1", 0),
        (3, 0, "orders-v1", 0),
    ]
    assert meta[0]["max_commit_ts"] == "2026-11-30T05:00:02.000"
    _assert_comments(spark, bronze, facts)


def _comments(spark, table: str) -> list[tuple[str, str | None]]:
    return [
        (r.col_name, r.comment)
        for r in spark.sql(f"DESCRIBE TABLE {table}").collect()
        if r.col_name and not r.col_name.startswith("#")
    ]


def _assert_comments(spark, bronze: str, facts: str) -> None:
    assert _comments(spark, f"delta.`{facts}`") == [(n, c) for n, _, c in FACTS_COLUMNS]
    bronze_comments = dict(_comments(spark, f"delta.`{bronze}`"))
    assert list(bronze_comments) == [
        "_capture_instance",
        "_start_lsn",
        "_seqval",
        "_operation",
        "_command_id",
        "_commit_ts",
        "id",
        "name",
        "_batch_id",
        "_snapshot",
        "_chunk",
    ]
    for name, comment in BRONZE_COLUMN_COMMENTS.items():
        assert bronze_comments[name] == comment
    assert (bronze_comments["id"], bronze_comments["name"]) == (None, None)
    for path, version in ((bronze, "2"), (facts, "12")):
        detail = spark.sql(f"DESCRIBE DETAIL delta.`{path}`").first()
        assert detail.properties["mssql_cdc.schema_version"] == version
        assert "delta_sink" in detail.description


def test_an_empty_first_batch_writes_a_facts_row_and_no_bronze_table(spark, tmp_path):
    bronze, facts = tmp_path / "bronze", str(tmp_path / "facts")
    delta_sink(str(bronze), "e1", facts)(changes(spark, []), 0)

    assert not bronze.exists()
    row = spark.read.format("delta").load(facts).collect()
    assert [
        (
            r.app_id,
            r.batch_id,
            r.rows,
            r.inserts,
            r.updates,
            r.deletes,
            r.min_lsn,
            r.max_commit_ts,
            r.event,
        )
        for r in row
    ] == [("e1", 0, 0, 0, 0, 0, None, None, None)]


def test_a_rewound_checkpoint_fails_its_first_batch_with_the_reason(spark):
    db = f"sink_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE DATABASE {db}")
    bronze, facts = f"{db}.orders", f"{db}.ingestion_facts"
    sink = delta_sink(bronze, "orders-v1", facts)
    sink(changes(spark, [change(1, 2, 1, "a")]), 0)
    sink(changes(spark, [change(2, 2, 2, "b")]), 1)

    # a new checkpoint under the same app_id starts again at batch 0
    with pytest.raises(ValueError, match=r"micro-batch 0 is not after batch 1.*deleted or rewound"):
        delta_sink(bronze, "orders-v1", facts)(changes(spark, [change(1, 2, 1, "a")]), 0)
    # a checkpoint rewound to its last batch's id but reading another range
    with pytest.raises(ValueError, match=r"micro-batch 1 has the id of the last batch.*max LSN"):
        delta_sink(bronze, "orders-v1", facts)(changes(spark, [change(3, 2, 3, "c")]), 1)

    assert spark.table(bronze).count() == 2
    assert [r.batch_id for r in spark.table(facts).orderBy("batch_id").collect()] == [0, 1]

    # a new app_id for the new checkpoint is the way out: its batch 0 is written, beside the old
    delta_sink(bronze, "orders-v2", facts)(changes(spark, [change(3, 2, 3, "c")]), 0)
    assert spark.table(bronze).count() == 3
    assert sorted((r.app_id, r.batch_id) for r in spark.table(facts).collect()) == [
        ("orders-v1", 0),
        ("orders-v1", 1),
        ("orders-v2", 0),
    ]


def test_without_facts_a_rewound_checkpoint_is_dropped_silently(spark, tmp_path):
    bronze = str(tmp_path / "bronze")
    delta_sink(bronze, "n1")(changes(spark, [change(1, 2, 1, "a")]), 0)
    delta_sink(bronze, "n1")(changes(spark, [change(7, 2, 7, "z")]), 0)
    assert [r.id for r in spark.read.format("delta").load(bronze).collect()] == [1]


def test_a_new_column_delta_cannot_name_fails_with_the_statement_that_enables_it(spark, tmp_path):
    """Bronze created without column mapping (no column needed it) meets a newer capture
    instance's ``[Unit Price]``: the batch fails before writing with the ALTER TABLE that
    enables column mapping, and after running it the replayed batch lands."""
    from pyspark.sql import functions as sf

    from mssql_cdc.errors import SchemaChangedError

    bronze = str(tmp_path / "bronze")
    sink = delta_sink(bronze, "cm")
    sink(changes(spark, BATCH0), 0)
    batch1 = changes(spark, BATCH1).withColumn("Unit Price", sf.lit(1.5))
    with pytest.raises(SchemaChangedError) as err:
        sink(batch1, 1)
    message = str(err.value)
    assert "'Unit Price'" in message, message
    statement = message[message.index("ALTER TABLE") : message.index("and restart")].strip()
    assert statement == (
        f"ALTER TABLE delta.`{bronze}` SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name', "
        "'delta.minReaderVersion' = '2', 'delta.minWriterVersion' = '5')"
    ), statement
    assert spark.read.format("delta").load(bronze).count() == len(BATCH0)  # nothing written

    spark.sql(statement)
    sink(batch1, 1)
    rows = spark.read.format("delta").load(bronze).where("_batch_id = 1").collect()
    assert [r["Unit Price"] for r in rows] == [1.5] * len(BATCH1)
