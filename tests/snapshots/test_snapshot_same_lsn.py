"""Two snapshots of a table at one LSN: ``snapshot(resnapshot=True)`` when CDC has captured
nothing since the target's snapshot.

Found by the fault harness (issue 37, ``make chaos TRIALS=1 SEED=3 KINDS=snapshot``): a driver
killed during ``snapshot()`` reran it, then took the planned ``snapshot(resnapshot=True)``
with no commit captured in between; both commits (``<app_id>#events`` versions 0 and 1) carry
``_snapshot`` = the same LSN, so bronze holds every row of that snapshot twice and a downstream
rebuild from it (the rows whose ``_snapshot`` is the LSN ``newest_snapshot`` gives) takes each
key twice. A quiet table does the same with two calls and no kill. A resnapshot at the LSN of
a snapshot the target holds now returns that one."""

from __future__ import annotations

from mssql_cdc import newest_snapshot, stream


def test_a_resnapshot_at_an_unchanged_lsn_leaves_each_key_once_in_its_snapshot(
    spark, source, tmp_path
):
    source.sql("INSERT INTO dbo.orders VALUES (1, N'a', 1), (2, N'b', 2), (3, N'c', 3)")
    source.scan()
    bronze = str(tmp_path / "bronze")
    cdc = stream(spark, source.options())
    first = cdc.snapshot(bronze, app_id="orders")
    second = cdc.snapshot(bronze, resnapshot=True, app_id="orders")  # nothing captured since
    assert second["lsn"] == first["lsn"]
    df = spark.read.format("delta").load(bronze).where("_operation = 0")
    for lsn in (second["lsn"], newest_snapshot(spark, bronze)["lsn"]):
        rows = df.where(f"_snapshot = '{lsn}'").collect()
        assert sorted(r["id"] for r in rows) == [1, 2, 3], lsn


def test_a_snapshot_without_app_id_of_an_empty_table_is_found_again(spark, source, tmp_path):
    """A snapshot without an app_id is committed under ``mssql_cdc#snapshot``; a second call is
    to find that commit and read nothing. It was looked for under an id nothing writes, so with
    no row to find it by, every call took another snapshot at a newer LSN."""
    bronze = str(tmp_path / "bronze")
    cdc = stream(spark, source.options())
    first = cdc.snapshot(bronze)
    source.sql("INSERT INTO dbo.other VALUES (1, N'later')")
    source.scan()
    again = cdc.snapshot(bronze)
    assert again["lsn"] == first["lsn"]
    versions = spark.sql(f"DESCRIBE HISTORY delta.`{bronze}`").where("operation = 'WRITE'")
    assert versions.count() == 1
