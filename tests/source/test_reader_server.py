"""The readers' driver and task sides against the server, without a Spark session."""

from __future__ import annotations

import pyarrow as pa
import pytest

from mssql_cdc.errors import SqlServerError
from mssql_cdc.options import parse_options
from mssql_cdc.source.catalog import infer_schema
from mssql_cdc.source.client import CdcClient
from mssql_cdc.source.compat import arrow_schema
from mssql_cdc.source.datasource import (
    HAS_ADMISSION_CONTROL,
    AdmissionStreamReader,
    MssqlCdcDataSource,
    to_struct,
)
from mssql_cdc.source.snapshot import plan_snapshot, read_snapshot


def reader(source, **options):
    opts = parse_options(source.options(**options))
    client = CdcClient(opts)
    schema = to_struct(infer_schema(client))
    client.close()
    return AdmissionStreamReader(opts, schema, 4)


def latest(r, start):
    """``latestOffset`` as Spark calls it: with the start and no limit on 4.2, without either
    on 4.0/4.1 (the legacy reader)."""
    if HAS_ADMISSION_CONTROL:
        from pyspark.sql.streaming.datasource import ReadAllAvailable

        return r.latestOffset(start, ReadAllAvailable())
    return r.latestOffset()


def test_an_idle_poll_costs_one_query_and_plans_nothing(source):
    source.sql("INSERT INTO dbo.orders VALUES (1, N'a', 1)")
    source.scan()
    r = reader(source, startingLsn="latest")
    start = r.initialOffset()
    latest(r, start)
    before = r.planner.client.stats()["round_trips"]
    assert latest(r, start) == start
    assert r.planner.client.stats()["round_trips"] - before == 1
    assert r.partitions(start, start) == []
    if HAS_ADMISSION_CONTROL:
        assert r.reportLatestOffset() == start
    r.stop()


def test_a_large_batch_splits_into_ranges_whose_union_is_exact(source):
    for i in range(12):
        source.sql(f"INSERT INTO dbo.orders VALUES ({i}, N'n', {i})")
    source.scan()
    r = reader(source)
    r.min_rows_per_partition = 3
    start = r.initialOffset()
    end = latest(r, start)
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
    schema = arrow_schema(to_struct(columns))
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


def test_the_legacy_reader_says_once_that_max_commits_per_batch_is_ignored(source, caplog):
    from mssql_cdc.source.datasource import LegacyStreamReader

    for i in range(3):
        source.sql(f"INSERT INTO dbo.orders VALUES ({i}, N'n', {i})")
    source.scan()
    newest = source.sql("SELECT sys.fn_cdc_get_max_lsn() AS l")[0]["l"]

    def legacy(**options):
        opts = parse_options(source.options(**options))
        client = CdcClient(opts)
        schema = to_struct(infer_schema(client))
        client.close()
        return LegacyStreamReader(opts, schema, 4)

    caplog.set_level("WARNING", logger="mssql_cdc.source")
    r = legacy(maxCommitsPerBatch="1")
    start = r.initialOffset()
    # Spark 4.0/4.1 pass no limit: every batch ends at the newest commit, three commits here
    assert r.latestOffset() == r.latestOffset() != start
    assert r.latestOffset()["lsn"] == "0x" + newest.hex().upper()
    warnings = [m.getMessage() for m in caplog.records if m.levelname == "WARNING"]
    assert len(warnings) == 1
    assert warnings[0].startswith("maxCommitsPerBatch=1 has no effect on Spark ")
    r.stop()
    caplog.clear()
    r = legacy()  # without the option: nothing to say
    r.latestOffset()
    assert not [m for m in caplog.records if m.levelname == "WARNING"]
    r.stop()


#: a new Python worker's whole read: the planner's calls, the task's read, a snapshot read
_WORKER = """
import json, sys
import pyarrow as pa
from mssql_cdc.options import parse_options
from mssql_cdc.source.catalog import infer_schema
from mssql_cdc.source.client import CdcClient
from mssql_cdc.source.compat import arrow_schema
from mssql_cdc.source.datasource import AdmissionStreamReader, HAS_ADMISSION_CONTROL, to_struct
from mssql_cdc.source.snapshot import plan_snapshot, read_snapshot

opts = parse_options(json.loads(sys.stdin.read()))
client = CdcClient(opts)
columns = infer_schema(client)
client.close()
r = AdmissionStreamReader(opts, to_struct(columns), 2)
r.min_rows_per_partition = 2
start = r.initialOffset()
if HAS_ADMISSION_CONTROL:
    from pyspark.sql.streaming.datasource import ReadAllAvailable
    end = r.latestOffset(start, ReadAllAvailable())
else:
    end = r.latestOffset()
changes = [b for p in r.partitions(start, end) for b in r.read(p)]
r.commit(end)
r.stop()
snapshot = [
    b
    for p in plan_snapshot(opts, columns, 2)
    for b in read_snapshot(opts, arrow_schema(to_struct(columns)), p)
]
# the clocks' other paths, and a datetimeoffset key value as snapshot planning reads one
import datetime as dt
from mssql_cdc.source.arrow import pylist, timestamps
from mssql_cdc.source.clock import ServerClock
local = timestamps([dt.datetime(2026, 11, 1, 1, 50), dt.datetime(2026, 11, 1, 1, 10), None])
ServerClock(offset_minutes=-180).to_utc_array(local, None)
ServerClock(zone="America/Los_Angeles").to_utc_array(local, None)  # a fall-back hour
pylist(pa.Table.from_arrays([local.cast(pa.timestamp("us", tz="UTC"))], names=["key"]))
meta = ["_start_lsn", "_commit_ts", "_capture_instance"]
rows = [pa.Table.from_batches(x).select(meta).num_rows for x in (changes, snapshot)]
print(json.dumps({"rows": rows, "pandas": "pandas" in sys.modules}))
"""


@pytest.mark.parametrize("clock", ["server", "pacific"])
def test_a_new_worker_reads_without_importing_pandas(request, clock, tmp_path):
    """pyarrow imports pandas (about 0.25 s) on its first conversion of a Python value; a
    reader that asked for one paid it in every new Python worker (the planner's, each task's).
    The whole read runs in a fresh interpreter here, with every metadata column, partitions,
    the metrics files and, for ``pacific``, commit times converted from a named zone; then the
    clocks' fixed-offset and fall-back-hour paths and a ``datetimeoffset`` key value."""
    import json
    import subprocess
    import sys

    pytest.importorskip("pandas")  # without it the assertion would hold trivially
    source = request.getfixturevalue("source" if clock == "server" else "pacific_source")
    for i in range(4):
        source.sql(f"INSERT INTO dbo.orders VALUES ({i}, N'n{i}', {i})")
    source.sql("UPDATE dbo.orders SET qty = 9 WHERE id = 1")
    source.sql("DELETE FROM dbo.orders WHERE id = 2")
    source.scan()
    options = source.options(startingLsn="earliest", metricsPath=str(tmp_path / "metrics"))
    done = subprocess.run(
        [sys.executable, "-c", _WORKER],
        input=json.dumps(options),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"rows": [7, 3], "pandas": False}


def test_a_datetimeoffset_key_splits_into_ranges_whose_union_is_exact(source):
    """Keyset bounds of a ``datetimeoffset`` key are read with ``arrow.pylist`` (ADR 0178) and
    bound back as ISO text with the UTC offset; every row lands in exactly one range."""
    source.sql("CREATE TABLE dbo.events (at datetimeoffset(7) NOT NULL PRIMARY KEY, v int)")
    source.sql(
        "EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N'events', "
        "@role_name = NULL"
    )
    # UTC values: the emulator orders and compares datetimeoffset by its local time and text,
    # SQL Server by the instant, so only there do other offsets range the same way
    values = ", ".join(f"('2026-03-08 01:{i:02d}:00.123 +00:00', {i})" for i in range(30))
    source.sql(f"INSERT INTO dbo.events VALUES {values}")
    opts = parse_options(source.options(captureInstance="dbo_events", numPartitions="3"))
    client = CdcClient(opts)
    columns = infer_schema(client)
    client.close()
    parts = plan_snapshot(opts, columns, 3)
    assert len(parts) == 3
    schema = arrow_schema(to_struct(columns))
    seen = [b for p in parts for b in read_snapshot(opts, schema, p)]
    got = pa.Table.from_batches(seen).column("v").to_pylist()
    assert sorted(got) == list(range(30))
    bounds = [p.lo for p in parts]
    assert bounds == [
        None,
        ("2026-03-08T01:10:00.123000+00:00",),
        ("2026-03-08T01:20:00.123000+00:00",),
    ]
