"""Schema changes seen by the stream reader's driver and tasks against the server, without a
Spark session (docs/schema-changes.md): DDL inside a batch, the two policies, a newer capture
instance switched to in place or at a restart, and a disabled old instance."""

from __future__ import annotations

import json

import pytest
from test_reader_server import latest, reader

from mssql_cdc import SchemaChangedError

V2 = (
    "EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N'orders', "
    "@role_name = NULL, @capture_instance = N'dbo_orders_v2'"
)
DISABLE_OLD = (
    "EXEC sys.sp_cdc_disable_table @source_schema = N'dbo', @source_name = N'orders', "
    "@capture_instance = N'dbo_orders'"
)


def events(path):
    out = []
    for f in sorted(path.glob("event-*.json")):
        out.append(json.loads(f.read_text()))
    return out


def read_all(r, start, end):
    return [row for p in r.partitions(start, end) for b in r.read(p) for row in b.to_pylist()]


def test_an_added_column_goes_on_with_a_warning_and_a_schema_change_event(source, tmp_path, caplog):
    metrics = tmp_path / "m"
    r = reader(source, metricsPath=str(metrics))
    start = r.initialOffset()
    source.sql("INSERT INTO dbo.orders VALUES (1, N'a', 1)")
    source.sql("ALTER TABLE dbo.orders ADD note nvarchar(10) NULL")
    source.sql("INSERT INTO dbo.orders (id, name, qty, note) VALUES (2, N'b', 2, N'x')")
    source.scan()
    caplog.set_level("WARNING", logger="mssql_cdc.source")
    end = latest(r, start)
    rows = read_all(r, start, end)
    assert [row["id"] for row in rows] == [1, 2]
    assert "note" not in rows[0]
    [event] = events(metrics)
    assert event["kind"] == "schema_change"
    assert event["detail"].upper().startswith("ALTER TABLE")
    assert "ADD" in event["detail"].upper()
    assert event["capture_instance"] == "dbo_orders"
    assert rows[0]["_start_lsn"] < event["lsn"] < rows[1]["_start_lsn"]
    assert event["commit_ts"]
    warnings = [m.getMessage() for m in caplog.records if m.levelname == "WARNING"]
    assert any("DDL at" in w and "enable a new capture instance" in w for w in warnings)
    r.stop()


def test_a_quiet_stream_still_polls_with_one_query(source):
    r = reader(source)
    start = r.initialOffset()
    source.sql("ALTER TABLE dbo.orders ADD note nvarchar(10) NULL")
    source.scan()
    end = latest(r, start)
    r.partitions(start, end)  # the DDL's batch
    before = r.planner.client.stats()["round_trips"]
    assert latest(r, end) == end
    assert r.partitions(end, end) == []
    assert r.planner.client.stats()["round_trips"] - before == 1
    r.stop()


def test_a_widening_the_query_holds_goes_on(source):
    r = reader(source)
    start = r.initialOffset()
    source.sql("INSERT INTO dbo.orders VALUES (1, N'a', 1)")
    source.sql("ALTER TABLE dbo.orders ALTER COLUMN name nvarchar(50) NULL")
    source.sql("INSERT INTO dbo.orders VALUES (2, N'0123456789012345678901234567890', 2)")
    source.scan()
    rows = read_all(r, start, latest(r, start))
    assert [row["name"] for row in rows] == ["a", "0123456789012345678901234567890"]
    r.stop()


def test_a_type_the_query_cannot_hold_fails_the_batch_before_it_reads(source):
    r = reader(source)
    start = r.initialOffset()
    source.sql("INSERT INTO dbo.orders VALUES (1, N'a', 1)")
    source.sql("ALTER TABLE dbo.orders ALTER COLUMN qty bigint NULL")
    source.sql("INSERT INTO dbo.orders VALUES (2, N'b', 5000000000)")
    source.scan()
    end = latest(r, start)
    with pytest.raises(SchemaChangedError) as info:
        r.partitions(start, end)
    text = str(info.value)
    assert text.startswith("dbo_orders: the type of captured column(s) qty BIGINT (read as INT)")
    assert "delta.enableTypeWidening" in text
    r.stop()
    again = reader(source)  # the restart re-infers the schema: qty is BIGINT
    assert [row["qty"] for row in read_all(again, start, end)] == [1, 5000000000]
    again.stop()


def test_schema_change_policy_fail_fails_on_any_ddl(source):
    r = reader(source, schemaChangePolicy="fail")
    start = r.initialOffset()
    source.sql("ALTER TABLE dbo.orders ADD note nvarchar(10) NULL")
    source.scan()
    end = latest(r, start)
    with pytest.raises(SchemaChangedError, match="and schemaChangePolicy=fail"):
        r.partitions(start, end)
    r.stop()
    again = reader(source)  # restarted once with classify
    assert read_all(again, start, end) == []
    again.stop()


def test_a_newer_instance_the_schema_holds_is_switched_to_in_place(source, tmp_path):
    metrics = tmp_path / "m"
    r = reader(source, metricsPath=str(metrics))
    start = r.initialOffset()
    source.sql("INSERT INTO dbo.orders VALUES (1, N'a', 1)")
    source.sql(
        "EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N'orders', "
        "@role_name = NULL, @capture_instance = N'dbo_orders_v2', "
        "@captured_column_list = N'id, name'"
    )
    source.sql("INSERT INTO dbo.orders VALUES (2, N'b', 2)")
    source.scan()
    rows = read_all(r, start, latest(r, start))
    assert [(x["id"], x["qty"], x["_capture_instance"]) for x in rows] == [
        (1, 1, "dbo_orders"),
        (2, None, "dbo_orders_v2"),
    ]
    [event] = events(metrics)
    assert event["kind"] == "capture_instance_switched"
    assert event["detail"] == ("dbo_orders -> dbo_orders_v2; no longer captured, read as NULL: qty")
    r.stop()


def test_a_newer_instance_with_a_new_column_stops_the_query_and_the_restart_reads_it(source):
    r = reader(source)
    start = r.initialOffset()
    source.sql("INSERT INTO dbo.orders VALUES (1, N'a', 1)")
    source.sql("ALTER TABLE dbo.orders ADD note nvarchar(10) NULL")
    source.sql("INSERT INTO dbo.orders (id, name, qty, note) VALUES (2, N'b', 2, N'lost?')")
    source.sql(V2)
    source.sql("INSERT INTO dbo.orders (id, name, qty, note) VALUES (3, N'c', 3, N'kept')")
    source.scan()
    end = latest(r, start)
    with pytest.raises(SchemaChangedError, match="reaches capture instance 'dbo_orders_v2'"):
        r.partitions(start, end)
    r.stop()
    again = reader(source)
    rows = read_all(again, start, end)
    assert [(x["id"], x["note"], x["_capture_instance"]) for x in rows] == [
        (1, None, "dbo_orders"),
        (2, None, "dbo_orders"),
        (3, "kept", "dbo_orders_v2"),
    ]
    again.stop()


def test_the_default_name_follows_the_newest_instance_after_the_old_one_is_disabled(source):
    r = reader(source)
    start = r.initialOffset()
    source.sql("INSERT INTO dbo.orders VALUES (1, N'a', 1)")
    source.sql(V2)
    source.sql("INSERT INTO dbo.orders VALUES (2, N'b', 2)")
    source.scan()
    middle = latest(r, start)
    assert [x["id"] for x in read_all(r, start, middle)] == [1, 2]
    source.sql(DISABLE_OLD)
    source.sql("INSERT INTO dbo.orders VALUES (3, N'c', 3)")
    source.scan()
    end = latest(r, middle)
    assert [(x["id"], x["_capture_instance"]) for x in read_all(r, middle, end)] == [
        (3, "dbo_orders_v2")
    ]
    r.stop()
    again = reader(source)  # a restart (load) with the old default name
    assert again.partitions(middle, end)
    again.stop()


def test_a_disabled_custom_name_says_to_switch_the_option(source):
    source.sql(V2)
    source.scan()
    r = reader(source, captureInstance="dbo_orders_v2")
    start = r.initialOffset()
    source.sql(
        "EXEC sys.sp_cdc_disable_table @source_schema = N'dbo', @source_name = N'orders', "
        "@capture_instance = N'dbo_orders_v2'"
    )
    source.sql("INSERT INTO dbo.orders VALUES (1, N'a', 1)")
    source.scan()
    with pytest.raises(ValueError, match="set the option captureInstance to 'dbo_orders'"):
        r.partitions(start, latest(r, start))
    r.stop()


def test_a_snapshot_after_a_dropped_column_reads_it_as_null(source):
    from mssql_cdc.options import parse_options
    from mssql_cdc.source.catalog import infer_schema
    from mssql_cdc.source.client import CdcClient
    from mssql_cdc.source.compat import arrow_schema
    from mssql_cdc.source.datasource import to_struct
    from mssql_cdc.source.snapshot import plan_snapshot, read_snapshot

    source.sql("INSERT INTO dbo.orders VALUES (1, N'a', 1)")
    source.sql("ALTER TABLE dbo.orders DROP COLUMN name")
    source.sql("INSERT INTO dbo.orders (id, qty) VALUES (2, 2)")
    source.scan()
    opts = parse_options(source.options())
    client = CdcClient(opts)
    columns = infer_schema(client)  # the instance still captures name
    client.close()
    assert "name" in [c.name for c in columns]
    schema = arrow_schema(to_struct(columns))
    rows = [
        row
        for part in plan_snapshot(opts, columns, 1)
        for b in read_snapshot(opts, schema, part)
        for row in b.to_pylist()
    ]
    assert [(r["id"], r["name"], r["qty"]) for r in rows] == [(1, None, 1), (2, None, 2)]


def test_two_instances_typing_a_column_incompatibly_fail_the_schema_naming_both(source):
    """load() infers the union of the instances' columns. A type change follows into every
    instance's change table, so two instances disagree only over a column dropped and added
    again under the same name: qty INT in the old instance, NVARCHAR in the new one cannot be
    one column, and the error names both instances."""
    from mssql_cdc.source.datasource import MssqlCdcDataSource

    source.sql("ALTER TABLE dbo.orders DROP COLUMN qty")
    source.sql("ALTER TABLE dbo.orders ADD qty nvarchar(20) NULL")
    source.sql(V2)
    with pytest.raises(SchemaChangedError) as err:
        MssqlCdcDataSource(source.options()).schema()
    message = str(err.value)
    for part in ("'dbo_orders'", "'dbo_orders_v2'", "'qty'", "INT", "STRING"):
        assert part in message, (part, message)
    assert "columns option" in message  # what to do
