"""The snapshot source in real local Spark against the emulator: keyset partitions for
non-integer and composite keys, one partition without a key, ``snapshotChunks`` /
``snapshotKeys``, and SNAPSHOT vs READ COMMITTED under an open writer."""

from __future__ import annotations

import pytest
from pyspark.sql.functions import spark_partition_id

import mssql_cdc
from mssql_cdc._metrics import metrics_dir
from mssql_cdc.options import parse_options
from mssql_cdc.source.catalog import infer_schema
from mssql_cdc.source.client import CdcClient
from mssql_cdc.source.snapshot import plan_snapshot


def enable(source, table: str) -> None:
    source.sql(
        f"EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N'{table}', "
        "@role_name = NULL"
    )


def snapshot(spark, source, table: str, **options: str):
    mssql_cdc.register(spark)
    return (
        spark.read.format("mssql_cdc_snapshot")
        .options(**source.options(captureInstance=f"dbo_{table}", **options))
        .load()
    )


def partition_sizes(df) -> list[int]:
    counts = df.groupBy(spark_partition_id().alias("p")).count().collect()
    return sorted(r["count"] for r in counts)


def test_keyset_partitions_for_string_guid_and_composite_keys(spark, source):
    source.sql("CREATE TABLE dbo.names (code nvarchar(20) NOT NULL PRIMARY KEY, v int)")
    source.sql("CREATE TABLE dbo.guids (id uniqueidentifier NOT NULL PRIMARY KEY, v int)")
    source.sql(
        "CREATE TABLE dbo.lines (o int NOT NULL, l int NOT NULL, v nvarchar(10), "
        "PRIMARY KEY (o, l))"
    )
    source.sql("CREATE TABLE dbo.heap (v int, w nvarchar(10))")
    for table in ("names", "guids", "lines", "heap"):
        enable(source, table)
    source.sql(
        "INSERT INTO dbo.names VALUES "
        + ", ".join(f"(N'{chr(97 + i % 26)}-Ünï{i:02d}', {i})" for i in range(30))
    )
    source.sql("INSERT INTO dbo.guids VALUES " + ", ".join(f"(NEWID(), {i})" for i in range(30)))
    source.sql(
        "INSERT INTO dbo.lines VALUES "
        + ", ".join(f"({o}, {ln}, N'{o}.{ln}')" for o in range(5) for ln in range(6))
    )
    source.sql("INSERT INTO dbo.heap VALUES " + ", ".join(f"({i}, N'h{i}')" for i in range(30)))
    source.scan()

    names = snapshot(spark, source, "names", numPartitions="3")
    assert names.rdd.getNumPartitions() == 3
    assert partition_sizes(names) == [10, 10, 10]
    assert sorted((r["code"], r["v"]) for r in names.collect()) == sorted(
        (f"{chr(97 + i % 26)}-Ünï{i:02d}", i) for i in range(30)
    )

    guids = snapshot(spark, source, "guids", numPartitions="4")
    assert partition_sizes(guids) == [6, 8, 8, 8]  # ceil(30 / 4) keys per seek
    expected = source.sql("SELECT id, v FROM dbo.guids")
    assert sorted((r["id"], r["v"]) for r in guids.collect()) == sorted(
        (r["id"], r["v"]) for r in expected
    )

    lines = snapshot(spark, source, "lines", numPartitions="3")
    assert partition_sizes(lines) == [10, 10, 10]
    got = lines.select("o", "l", "v", spark_partition_id().alias("p")).collect()
    assert sorted((r["o"], r["l"], r["v"]) for r in got) == [
        (o, ln, f"{o}.{ln}") for o in range(5) for ln in range(6)
    ]
    by_part: dict[int, list[tuple[int, int]]] = {}
    for r in got:
        by_part.setdefault(r["p"], []).append((r["o"], r["l"]))
    firsts = sorted(min(keys) for keys in by_part.values())
    assert firsts == [(0, 0), (1, 4), (3, 2)]  # each bound 10 keys past the previous

    heap = snapshot(spark, source, "heap", numPartitions="3")
    assert heap.rdd.getNumPartitions() == 1  # no unique index: one partition
    assert sorted(r["v"] for r in heap.collect()) == list(range(30))
    assert {r["_operation"] for r in heap.collect()} == {0}


def test_snapshot_chunks_and_keys_read_only_the_given_ranges(spark, source, tmp_path):
    source.sql(
        "CREATE TABLE dbo.lines (o int NOT NULL, l int NOT NULL, v nvarchar(10), "
        "PRIMARY KEY (o, l))"
    )
    source.sql("CREATE TABLE dbo.heap (v int, w nvarchar(10))")
    enable(source, "lines")
    enable(source, "heap")
    source.sql(
        "INSERT INTO dbo.lines VALUES "
        + ", ".join(f"({o}, {ln}, N'{o}.{ln}')" for o in range(4) for ln in range(3))
    )
    source.sql("INSERT INTO dbo.heap VALUES " + ", ".join(f"({i}, N'h{i}')" for i in range(6)))
    source.scan()

    chunks = "[[0, null, [1, 2]], [1, [1, 2], [3, 0]], [5, [3, 0], null]]"
    metrics = tmp_path / "metrics"
    df = snapshot(spark, source, "lines", snapshotChunks=chunks, metricsPath=str(metrics))
    assert df.columns[-1] == "_chunk"
    assert df.rdd.getNumPartitions() == 3
    rows = sorted((r["o"], r["l"], r["_chunk"]) for r in df.collect())
    assert rows == [
        (o, ln, 0 if (o, ln) < (1, 2) else 1 if (o, ln) < (3, 0) else 5)
        for o in range(4)
        for ln in range(3)
    ]
    # each chunk's task leaves chunk-<i>.json: its rows and the max LSN after its read
    files = metrics_dir(str(metrics)).chunks()
    assert [(f["chunk"], f["rows"]) for f in files] == [(0, 5), (1, 4), (5, 3)]
    max_lsn = "0x" + source.sql("SELECT sys.fn_cdc_get_max_lsn() AS m")[0]["m"].hex().upper()
    assert {f["max_lsn"] for f in files} == {max_lsn}
    assert all(f["bytes"] > 0 and f["seconds"] >= 0 for f in files)

    # a table without a unique index: bounds on the columns snapshotKeys names
    df = snapshot(
        spark,
        source,
        "heap",
        snapshotKeys='["w"]',
        snapshotChunks='[[0, null, "h2"], [1, "h2", "h4"]]',
    )
    assert sorted((r["w"], r["_chunk"]) for r in df.collect()) == [
        ("h0", 0),
        ("h1", 0),
        ("h2", 1),
        ("h3", 1),
    ]

    opts = parse_options(source.options(captureInstance="dbo_heap", snapshotChunks="[[0, 1, 2]]"))
    client = CdcClient(opts)
    columns = infer_schema(client)
    client.close()
    with pytest.raises(ValueError, match="no unique index CDC uses; set snapshotKeys"):
        plan_snapshot(opts, columns, 2)
    opts = parse_options(
        source.options(captureInstance="dbo_lines", snapshotChunks="[[0, 1, [2, 0]]]")
    )
    with pytest.raises(ValueError, match=r"bounds of 2 value\(s\) for the key \(\[o\], \[l\]\)"):
        plan_snapshot(opts, columns, 2)


def test_snapshot_isolation_reads_past_an_open_writer_read_committed_times_out(spark, source):
    source.sql("INSERT INTO dbo.orders VALUES (1, N'a', 1), (2, N'b', 2), (3, N'c', 3)")
    source.scan()
    source.sql("ALTER DATABASE CURRENT SET ALLOW_SNAPSHOT_ISOLATION ON")
    writer = source.conn
    writer.execute("BEGIN TRAN")
    writer.execute("UPDATE dbo.orders SET qty = 99 WHERE id = 2")
    try:
        df = snapshot(
            spark,
            source,
            "orders",
            isolationLevel="snapshot",
            lockTimeoutMs="500",
            numPartitions="2",
        )
        assert sorted((r["id"], r["qty"]) for r in df.collect()) == [(1, 1), (2, 2), (3, 3)]
        with pytest.raises(Exception, match="1222"):
            snapshot(spark, source, "orders", lockTimeoutMs="200", numPartitions="1").collect()
    finally:
        writer.execute("COMMIT TRAN")
    df = snapshot(spark, source, "orders", lockTimeoutMs="200")
    assert sorted((r["id"], r["qty"]) for r in df.collect()) == [(1, 1), (2, 99), (3, 3)]
