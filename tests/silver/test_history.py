"""Type 2 details on a hand-made bronze table (no server): a change outside track_columns
rewrites the open version in place, and a column bronze gains is added to silver."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from mssql_cdc import apply_changes

DDL = (
    "_capture_instance STRING, _start_lsn STRING, _seqval STRING, _operation INT, "
    "_command_id INT, _commit_ts TIMESTAMP_NTZ, id INT, qty INT, note STRING, _batch_id INT, "
    "_snapshot STRING, _chunk INT"
)
T0 = datetime(2026, 1, 1)


def lsn(n: int) -> str:
    return f"0x{n:020X}"


def row(n: int, op: int, id_: int, qty: int, note: str) -> tuple[object, ...]:
    snap = op == 0
    return (
        "dbo_t",
        lsn(n),
        None if snap else lsn(n),
        op,
        None if snap else 1,
        T0 + timedelta(minutes=n),
        id_,
        qty,
        note,
        None if snap else n,
        lsn(n) if snap else None,
        None,
    )


def test_untracked_changes_rewrite_the_open_version_and_new_columns_are_added(spark, tmp_path):
    bronze, history = str(tmp_path / "bronze"), str(tmp_path / "history")
    spark.createDataFrame(
        [
            row(10, 0, 1, 1, "x"),
            row(12, 3, 1, 1, "x"),  # only the note changes: no new version
            row(12, 4, 1, 1, "y"),
            row(13, 3, 1, 1, "y"),  # qty changes: a new version
            row(13, 4, 1, 2, "y"),
        ],
        DDL,
    ).write.format("delta").save(bronze)
    kw = {"capture_instance": "dbo_t", "keys": ["id"], "control_table": str(tmp_path / "c")}
    apply_changes(spark, bronze, history, scd_type=2, track_columns=["qty"], **kw)
    got = spark.read.format("delta").load(history).orderBy("_start_lsn").collect()
    assert [(r.qty, r.note, r._start_lsn, r._end_lsn, r["__END_AT"]) for r in got] == [
        (1, "y", lsn(10), lsn(13), T0 + timedelta(minutes=13)),
        (2, "y", lsn(13), None, None),
    ]

    # bronze gains a column (a newer capture instance): silver gets it, older rows NULL
    added = spark.createDataFrame(
        [(*row(14, 3, 1, 2, "y"), None), (*row(14, 4, 1, 3, "y"), "new")],
        DDL + ", extra STRING",
    )
    added.write.format("delta").mode("append").option("mergeSchema", "true").save(bronze)
    result = apply_changes(spark, bronze, history, scd_type=2, track_columns=["qty"], **kw)
    assert result.applied_lsn == lsn(14)
    got = spark.read.format("delta").load(history).orderBy("_start_lsn").collect()
    assert [(r.qty, r.extra, r["__IS_CURRENT"]) for r in got] == [
        (1, None, False),
        (2, None, False),
        (3, "new", True),
    ]

    # the same table as type 1 is refused, also by a call with nothing to merge
    with pytest.raises(ValueError, match=r"scd_type=2\), not scd_type=1"):
        apply_changes(spark, bronze, history, scd_type=1, **kw)
