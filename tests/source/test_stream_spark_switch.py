"""A capture instance with a newer sibling is followed at the newer one's start_lsn (issue 5,
item 6; ``_capture_instance`` in docs/reference/bronze-schema.md), in local Spark against the
emulator."""

from __future__ import annotations

from test_stream_spark import COLUMNS, read_rows, run, workload

from mssql_cdc import Lsn


def test_a_newer_capture_instance_is_followed_from_its_start_lsn(spark, source, tmp_path):
    workload(source, 1)
    source.scan()
    source.sql(
        "EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N'orders', "
        "@role_name = NULL, @capture_instance = N'dbo_orders_v2'"
    )
    start_v2 = Lsn(
        source.sql(
            "SELECT start_lsn FROM cdc.change_tables WHERE capture_instance = N'dbo_orders_v2'"
        )[0]["start_lsn"]
    )
    workload(source, 100)
    source.scan()

    run(spark, source, tmp_path / "cp", tmp_path / "out")
    rows = read_rows(spark, tmp_path / "out")

    old = [r for r in source.changes("dbo_orders") if Lsn.parse(r[0]) <= start_v2]
    new = [r for r in source.changes("dbo_orders_v2") if Lsn.parse(r[0]) > start_v2]
    assert old
    assert new
    assert [tuple(r[c] for c in COLUMNS) for r in rows] == old + new
    assert [r["_capture_instance"] for r in rows] == ["dbo_orders"] * len(old) + [
        "dbo_orders_v2"
    ] * len(new)
