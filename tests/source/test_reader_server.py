"""The readers' driver and task sides against the server, without a Spark session."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.streaming.datasource import ReadAllAvailable

from mssql_cdc.errors import SqlServerError
from mssql_cdc.options import parse_options
from mssql_cdc.source.client import CdcClient
from mssql_cdc.source.datasource import (
    AdmissionStreamReader,
    MssqlCdcDataSource,
    to_struct,
)
from mssql_cdc.source.planner import infer_schema
from mssql_cdc.source.snapshot import plan_snapshot, read_snapshot


def reader(source, **options):
    opts = parse_options(source.options(**options))
    client = CdcClient(opts)
    schema = to_struct(infer_schema(client))
    client.close()
    return AdmissionStreamReader(opts, schema, 4)


def test_an_idle_poll_costs_one_query_and_plans_nothing(source):
    source.sql("INSERT INTO dbo.orders VALUES (1, N'a', 1)")
    source.scan()
    r = reader(source, startingLsn="latest")
    start = r.initialOffset()
    r.latestOffset(start, ReadAllAvailable())
    before = r.planner.client.stats()["round_trips"]
    assert r.latestOffset(start, ReadAllAvailable()) == start
    assert r.planner.client.stats()["round_trips"] - before == 1
    assert r.partitions(start, start) == []
    assert r.reportLatestOffset() == start
    r.stop()


def test_a_large_batch_splits_into_ranges_whose_union_is_exact(source):
    for i in range(12):
        source.sql(f"INSERT INTO dbo.orders VALUES ({i}, N'n', {i})")
    source.scan()
    r = reader(source)
    r.min_rows_per_partition = 3
    start = r.initialOffset()
    end = r.latestOffset(start, ReadAllAvailable())
    parts = r.partitions(start, end)
    assert len(parts) == 4
    assert [p.last for p in parts] == [False, False, False, True]
    rows = [row for p in parts for b in r.read(p) for row in b.to_pylist()]
    ids = [row["id"] for row in rows]
    assert ids == list(range(12))
    lsns = [row["_start_lsn"] for row in rows]
    assert lsns == sorted(lsns)
    r.stop()


def test_missing_change_table_grant_is_a_permission_error_with_the_grant(source):
    source.sql("CREATE LOGIN reader WITH PASSWORD = 'Reader-Passw0rd!'")
    source.sql("CREATE USER reader FOR LOGIN reader")
    source.sql("GRANT SELECT ON dbo.orders TO reader")
    options = source.options(user="reader", password="Reader-Passw0rd!")
    with pytest.raises(PermissionError) as info:
        MssqlCdcDataSource(options).schema()
    assert "GRANT SELECT ON cdc.[dbo_orders_CT] TO [reader];" in str(info.value)
    assert "Reader-Passw0rd!" not in str(info.value)


def test_snapshot_waits_for_a_writer_unless_lock_timeout_is_set(source):
    source.sql("INSERT INTO dbo.orders VALUES (1, N'a', 1), (2, N'b', 2)")
    source.scan()
    opts = parse_options(source.options(lockTimeoutMs="200"))
    client = CdcClient(opts)
    columns = infer_schema(client)
    client.close()
    schema = to_arrow_schema(to_struct(columns), timezone="UTC")
    (part,) = plan_snapshot(opts, columns, 1)
    writer = source.conn
    writer.execute("BEGIN TRAN")
    writer.execute("UPDATE dbo.orders SET qty = 9 WHERE id = 1")
    with pytest.raises(SqlServerError) as info:
        list(read_snapshot(opts, schema, part))
    assert info.value.number == 1222
    writer.execute("COMMIT TRAN")
    batches = list(read_snapshot(opts, schema, part))
    table = pa.Table.from_batches(batches)
    assert table.column("qty").to_pylist() == [9, 2]
    assert set(table.column("_operation").to_pylist()) == {0}
