"""Stream proofs in real local Spark against the emulator: a split batch, data loss found in a
task, driver retries on a failover, and the AdventureWorks types.

The data source is registered as a subclass defined in :func:`register_tuned`, so Spark pickles
it by value into its Python workers: it lowers the split threshold or the retry waits, logs the
driver worker's WARNINGs to a file, or runs a hook in the task before its read.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import logging
from collections.abc import Callable
from pathlib import Path

import pytest

import mssql_cdc
from mssql_cdc import Lsn, _native

COLUMNS = ["_start_lsn", "_seqval", "_operation", "_command_id", "id", "name", "qty"]


def read_rows(spark, output):
    rows = spark.read.parquet(str(output)).orderBy(
        "_start_lsn", "_command_id", "_seqval", "_operation"
    )
    return rows.collect()


def register_tuned(
    spark,
    *,
    min_rows: int | None = None,
    delays: tuple[float, ...] | None = None,
    log_file: Path | None = None,
    before_read: Callable[[object], None] | None = None,
) -> None:
    """Register ``format("mssql_cdc")`` with test knobs (replaces the normal registration)."""
    from mssql_cdc.source.datasource import AdmissionStreamReader, MssqlCdcDataSource

    cores = int(spark.sparkContext.defaultParallelism)

    class TunedReader(AdmissionStreamReader):
        def read(self, partition):
            if before_read is not None:
                before_read(partition)
            return super().read(partition)

    class Tuned(MssqlCdcDataSource):
        default_num_partitions = cores

        def streamReader(self, schema):  # noqa: N802 (Spark API); runs in the driver's streaming Python worker
            if log_file is not None:
                logger = logging.getLogger("mssql_cdc.source")
                if not any(
                    getattr(h, "baseFilename", "") == str(log_file) for h in logger.handlers
                ):
                    handler = logging.FileHandler(log_file)
                    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
                    logger.addHandler(handler)
            reader = TunedReader(self._options(), schema, self._partitions())
            if min_rows is not None:
                reader.min_rows_per_partition = min_rows
            if delays is not None:
                reader.retry_delays = delays
            return reader

    spark.dataSource.register(Tuned)


def start(spark, source, tmp_path, name, **options):
    df = spark.readStream.format("mssql_cdc").options(**source.options(**options)).load()
    return (
        df.writeStream.format("parquet")
        .option("path", str(tmp_path / name))
        .option("checkpointLocation", str(tmp_path / f"{name}-cp"))
        .trigger(availableNow=True)
        .start()
    )


def lsn_of(source, sql: str) -> str:
    return "0x" + source.sql(sql)[0]["m"].hex().upper()


def test_num_partitions_splits_a_large_batch_and_the_union_is_exact(spark, source, tmp_path):
    for commit in range(38):
        values = ", ".join(f"({commit * 5 + i}, N'n{i}', {commit})" for i in range(5))
        source.sql(f"INSERT INTO dbo.orders VALUES {values}")
        if commit == 19:  # one commit of 40 rows (20 updates), never cut
            source.sql("UPDATE dbo.orders SET qty = qty + 100 WHERE id < 20")
    source.scan()
    history = source.changes()
    assert len(history) == 230
    register_tuned(spark, min_rows=60)
    metrics = tmp_path / "metrics"
    query = start(spark, source, tmp_path, "o", numPartitions="3", metricsPath=str(metrics))
    query.awaitTermination()
    rows = read_rows(spark, tmp_path / "o")
    assert [tuple(r[c] for c in COLUMNS) for r in rows] == history
    parts = sorted(
        (json.loads(p.read_text()) for p in metrics.glob("part-*.json")),
        key=lambda p: p["from_lsn"],
    )
    assert len(parts) == 3  # min(numPartitions, 230 // 60)
    assert sum(p["rows"] for p in parts) == 230
    assert [p["rows"] for p in parts] == [80, 75, 75]  # cut at commits, about equal rows
    for before, after in itertools.pairwise(parts):  # tiles without gap or overlap
        assert Lsn.parse(after["from_lsn"]) == Lsn.parse(before["to_lsn"]).next()
    assert parts[-1]["to_lsn"] == history[-1][0]
    assert [p["last"] for p in parts] == [False, False, True]


def _cleanup_hook(connection_string: str, password: str, low_water_mark: str):
    def cleanup(partition: object) -> None:  # runs in the Spark task, before its read
        conn = _native.connect(connection_string, user="sa", password=password)
        try:
            conn.execute(
                "EXEC sys.sp_cdc_cleanup_change_table @capture_instance = N'dbo_orders', "
                f"@low_water_mark = {low_water_mark}, @threshold = 5000"
            )
        finally:
            conn.close()

    return cleanup


def test_cleanup_between_planning_and_the_task_read_is_data_loss(spark, source, emulator, tmp_path):
    commits = []
    for i in range(4):
        emulator.advance_clock(dt.timedelta(minutes=1))
        source.sql(f"INSERT INTO dbo.orders VALUES ({i}, N'c{i}', {i})")
        source.scan()
        commits.append(lsn_of(source, "SELECT sys.fn_cdc_get_max_lsn() AS m"))
    history = source.changes()
    first = lsn_of(source, "SELECT sys.fn_cdc_get_min_lsn(N'dbo_orders') AS m")
    cs, pw = source.connection_string, source.server.password

    # failOnDataLoss=true: the driver saw commit 0 still held; the task finds it purged
    register_tuned(spark, before_read=_cleanup_hook(cs, pw, commits[1]))
    with pytest.raises(Exception, match="DataLossError") as info:
        start(spark, source, tmp_path, "o1").awaitTermination()
    message = str(info.value)
    assert f"dbo_orders: change data from {first} is gone (min_lsn is now {commits[1]})" in message
    assert f"lost LSNs {first} to {Lsn.parse(commits[1]).prev()}" in message

    # failOnDataLoss=false: skip what the task found purged, read the rest, record it
    register_tuned(spark, before_read=_cleanup_hook(cs, pw, commits[3]))
    metrics = tmp_path / "m"
    start(
        spark,
        source,
        tmp_path,
        "o2",
        startingLsn=str(Lsn.parse(commits[1]).prev()),
        failOnDataLoss="false",
        metricsPath=str(metrics),
    ).awaitTermination()
    rows = read_rows(spark, tmp_path / "o2")
    assert [tuple(r[c] for c in COLUMNS) for r in rows] == [
        h for h in history if h[0] >= commits[3]
    ]
    events = [json.loads(p.read_text()) for p in metrics.glob("event-data_skipped-*.json")]
    assert len(events) == 1
    assert events[0]["certain"] is False
    assert events[0]["from"] == commits[1]
    assert events[0]["to"] == str(Lsn.parse(commits[3]).prev())
    assert events[0]["lsn"] == commits[3]
    assert events[0]["reason"] == "purged before the task read it"


def test_driver_retries_a_failover_and_fails_a_longer_outage(spark, source, emulator, tmp_path):
    for i in range(3):
        source.sql(f"INSERT INTO dbo.orders VALUES ({i}, N'r{i}', {i})")
    source.scan()
    history = source.changes()

    # a failover: the planner's connection drops, the first re-login is refused, then it works
    log_file = tmp_path / "driver.log"
    register_tuned(spark, log_file=log_file)
    df = spark.readStream.format("mssql_cdc").options(**source.options()).load()
    fault = emulator.drop_connection("between_requests", after_requests=1)  # the planner's
    query = (
        df.writeStream.format("parquet")
        .option("path", str(tmp_path / "o1"))
        .option("checkpointLocation", str(tmp_path / "cp1"))
        .trigger(availableNow=True)
        .start()
    )
    assert fault.wait(60)
    emulator.refuse_logins(2.0)  # covers the retry after 1 s, not the one 3 s later
    query.awaitTermination()
    rows = read_rows(spark, tmp_path / "o1")
    assert [tuple(r[c] for c in COLUMNS) for r in rows] == history
    warnings = [line for line in log_file.read_text().splitlines() if line.startswith("WARNING")]
    assert len(warnings) == 2, warnings
    assert "failed (ConnectionLostError" in warnings[0]
    assert "retrying on a new connection in 1 s (retry 1 of 3)" in warnings[0]
    assert "failed (LoginError: [18456]" in warnings[1]
    assert "in 3 s (retry 2 of 3)" in warnings[1]

    # an outage longer than the retries: three WARNINGs, then the query fails
    log_file = tmp_path / "driver2.log"
    register_tuned(spark, log_file=log_file, delays=(0.1, 0.2, 0.4))
    df = spark.readStream.format("mssql_cdc").options(**source.options()).load()
    fault = emulator.drop_connection("between_requests", after_requests=1)
    query = (
        df.writeStream.format("parquet")
        .option("path", str(tmp_path / "o2"))
        .option("checkpointLocation", str(tmp_path / "cp2"))
        .trigger(availableNow=True)
        .start()
    )
    assert fault.wait(60)
    emulator.refuse_logins(60.0)
    with pytest.raises(Exception, match="18456"):
        query.awaitTermination()
    warnings = [line for line in log_file.read_text().splitlines() if line.startswith("WARNING")]
    assert len(warnings) == 3, warnings
    assert [w.split("(retry ")[1] for w in warnings] == ["1 of 3)", "2 of 3)", "3 of 3)"]
    assert source.server.password not in log_file.read_text()


AW_TABLES = [
    ("Purchasing", "PurchaseOrderHeader", "PurchaseOrderID <= 3"),
    ("Purchasing", "PurchaseOrderDetail", "PurchaseOrderID <= 2"),
    ("Production", "Product", "ProductID <= 4"),
    ("Sales", "Customer", "CustomerID <= 3"),
    ("Sales", "CurrencyRate", "CurrencyRateID <= 3"),
    ("Person", "EmailAddress", "BusinessEntityID <= 3"),
]


def _plain(value: object) -> object:
    if isinstance(value, bytearray):
        return bytes(value)
    return value


def test_every_adventureworks_table_reads_its_types_exactly(spark, source, emulator, tmp_path):
    emulator.load_adventureworks()
    for schema, table, _ in AW_TABLES:
        source.sql(
            f"EXEC sys.sp_cdc_enable_table @source_schema = N'{schema}', "
            f"@source_name = N'{table}', @role_name = NULL"
        )
    for schema, table, where in AW_TABLES:
        source.sql(
            # (DATEADD(day, 1, ModifiedDate) fails in the emulator: datetime is stored as text)
            f"UPDATE {schema}.{table} SET ModifiedDate = '2030-01-02T03:04:05.123' WHERE {where}"
        )
    source.sql("DELETE FROM Person.EmailAddress WHERE BusinessEntityID = 3")
    source.scan()
    mssql_cdc.register(spark)
    queries = {}
    for schema, table, _ in AW_TABLES:
        ci = f"{schema}_{table}"
        df = (
            spark.readStream.format("mssql_cdc")
            .options(**source.options(captureInstance=ci))
            .load()
        )
        queries[ci] = (
            df.writeStream.format("parquet")
            .option("path", str(tmp_path / ci))
            .option("checkpointLocation", str(tmp_path / f"{ci}-cp"))
            .trigger(availableNow=True)
            .start()
        )
        # one query at a time: six planning workers starting together can miss Spark's fixed
        # 10-second connect-back limit on a loaded 2-core machine (docs/development.md)
        queries[ci].awaitTermination()
    types: dict[str, str] = {}
    for ci in queries:
        out = spark.read.parquet(str(tmp_path / ci))
        captured = [c for c in out.columns if not c.startswith("_")]
        expected = source.sql(
            f"SELECT __$start_lsn AS l, __$seqval AS s, __$operation AS o, "
            f"{', '.join(f'[{c}]' for c in captured)} FROM cdc.fn_cdc_get_all_changes_{ci}("
            f"sys.fn_cdc_get_min_lsn(N'{ci}'), sys.fn_cdc_get_max_lsn(), N'all update old') "
            "ORDER BY __$start_lsn, __$seqval, __$operation"
        )
        got = out.orderBy("_start_lsn", "_seqval", "_operation").collect()
        assert len(got) == len(expected) > 0, ci
        for row, want in zip(got, expected, strict=True):
            assert row["_start_lsn"] == "0x" + want["l"].hex().upper()
            assert row["_operation"] == want["o"]
            assert {c: _plain(row[c]) for c in captured} == {c: want[c] for c in captured}, ci
        types.update({f"{ci}.{f.name}": f.dataType.simpleString() for f in out.schema.fields})
    assert types["Purchasing_PurchaseOrderHeader.SubTotal"] == "decimal(19,4)"  # money
    assert "Purchasing_PurchaseOrderHeader.TotalDue" not in types  # computed: left out
    assert types["Purchasing_PurchaseOrderDetail.UnitPrice"] == "decimal(19,4)"
    assert types["Purchasing_PurchaseOrderDetail.ReceivedQty"] == "decimal(8,2)"
    assert types["Production_Product.MakeFlag"] == "boolean"  # bit
    assert types["Sales_Customer.rowguid"] == "string"  # uniqueidentifier
    assert types["Sales_CurrencyRate.FromCurrencyCode"] == "string"  # nchar(3)
    assert types["Person_EmailAddress.ModifiedDate"] == "timestamp_ntz"  # datetime
    ops = {
        ci: sorted({r["_operation"] for r in spark.read.parquet(str(tmp_path / ci)).collect()})
        for ci in queries
    }
    assert ops["Person_EmailAddress"] == [1, 3, 4]
    assert ops["Sales_Customer"] == [3, 4]
