"""``newest_whole_snapshot(..., after=)``: only a whole snapshot newer than ``after`` counts,
whether its rows carry ``_snapshot`` or (bronze written before that column) only
``_start_lsn``; chunk rows never do. Spelled on the two columns so that Delta skips the files
of older snapshots, which an incremental ``apply_changes`` call then does not read."""

from __future__ import annotations

from datetime import datetime

from mssql_cdc.sink import table_ref
from mssql_cdc.sink.ledger.landed import newest_whole_snapshot

DDL = (
    "id INT, _operation INT, _start_lsn STRING, _snapshot STRING, _chunk INT, "
    "_commit_ts TIMESTAMP_NTZ"
)
OLD, NEW, CHUNKED = "0x00000000000000000010", "0x00000000000000000020", "0x00000000000000000030"


def _append(spark, path: str, rows: list[tuple]) -> None:
    rows = [(*r, datetime(2026, 1, 1)) for r in rows]
    spark.createDataFrame(rows, DDL).write.format("delta").mode("append").save(path)


def test_after_keeps_only_newer_whole_snapshots(spark, tmp_path):
    path = str(tmp_path / "bronze")
    _append(spark, path, [(1, 0, OLD, None, None), (2, 0, OLD, None, None)])  # legacy: no _snapshot
    _append(spark, path, [(3, 2, "0x00000000000000000015", None, None)])  # a change
    ref = table_ref(path, "target")
    assert newest_whole_snapshot(spark, ref)[0] == OLD
    assert newest_whole_snapshot(spark, ref, after="0x00000000000000000001")[0] == OLD
    assert newest_whole_snapshot(spark, ref, after=OLD) is None

    _append(spark, path, [(1, 0, NEW, NEW, None), (2, 0, NEW, NEW, None)])
    _append(spark, path, [(1, 0, "0x00000000000000000031", CHUNKED, 0)])  # a chunk: not whole
    assert newest_whole_snapshot(spark, ref)[0] == NEW
    assert newest_whole_snapshot(spark, ref, after=OLD)[0] == NEW
    assert newest_whole_snapshot(spark, ref, after=NEW) is None
    newer = spark.read.format("delta").load(path).where(f"_snapshot > '{NEW}'")
    assert newer.count() == 1  # the chunk row is there, and still not a whole snapshot
