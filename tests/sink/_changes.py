"""Synthetic change rows in the stream's output schema (docs/reference/bronze-schema.md metadata
columns, then two captured columns) and metrics files as the reader's tasks write them."""

from __future__ import annotations

from datetime import datetime, timedelta

from mssql_cdc._metrics import PartitionMetrics, metrics_dir

SCHEMA = (
    "_capture_instance STRING, _start_lsn STRING, _seqval STRING, _operation INT, "
    "_command_id INT, _commit_ts TIMESTAMP_NTZ, id INT, name STRING"
)
T0 = datetime(2026, 11, 30, 5, 0, 0)


def lsn(n: int) -> str:
    return f"0x{n:020X}"


def change(n: int, op: int, key: int, name: str | None) -> tuple:
    """A change committed at LSN ``n``, ``n`` seconds after T0."""
    return ("dbo_orders", lsn(n), lsn(n * 10 + op), op, 1, T0 + timedelta(seconds=n), key, name)


def changes(spark, rows: list[tuple]):
    return spark.createDataFrame(rows, SCHEMA)


def write_metrics(path: str, parts: list[PartitionMetrics], events=()) -> None:
    d = metrics_dir(path)
    for p in parts:
        assert d.write_partition(p)
    for kind, key, payload in events:
        assert d.write_event(kind, key, payload)


def reading(spark, rows: list[tuple], metrics_path: str | None, parts=(), *, reads_dir=None):
    """The change rows as the stream hands them to foreachBatch: evaluating the DataFrame is the
    read, and the read's one task writes the partition metrics files (as the reader's tasks do)
    and, with ``reads_dir``, one marker file per evaluation (to count reads)."""
    parts = list(parts)

    def read(rows):
        import uuid
        from pathlib import Path

        yield from rows
        if metrics_path is not None:
            d = metrics_dir(metrics_path)
            for p in parts:
                d.write_partition(p)
        if reads_dir is not None:
            Path(reads_dir).mkdir(parents=True, exist_ok=True)
            (Path(reads_dir) / uuid.uuid4().hex).touch()

    df = changes(spark, rows).coalesce(1)
    return spark.createDataFrame(df.rdd.mapPartitions(read), df.schema)


def write_offset(checkpoint: str, batch_id: int, end: str, commit_ts: str = "") -> None:
    """Spark's offset log entry ``<checkpoint>/offsets/<batch_id>`` of a one-source query whose
    batch ends at LSN ``end`` (what Spark writes before it runs the batch)."""
    import json
    from pathlib import Path

    offsets = Path(checkpoint) / "offsets"
    offsets.mkdir(parents=True, exist_ok=True)
    meta = {"batchWatermarkMs": 0, "batchTimestampMs": 0, "conf": {}}
    source = {"lsn": end, "commit_ts": commit_ts}
    (offsets / str(batch_id)).write_text(f"v1\n{json.dumps(meta)}\n{json.dumps(source)}")
