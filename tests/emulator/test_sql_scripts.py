"""The scripts in sql/ run on the emulator as sqlcmd would run them (variables substituted,
batches split at GO): setup.sql leaves a reader that `mssql-cdc check` passes, and the
heartbeat's UPDATE (the Agent job's step, driven here) moves a quiet database's max LSN."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mssql_cdc import _native, check
from mssql_cdc.options import parse_options
from mssql_cdc.source.catalog import infer_schema
from mssql_cdc.source.client import CdcClient
from mssql_cdc.source.datasource import HAS_ADMISSION_CONTROL, AdmissionStreamReader, to_struct
from mssql_cdc.source.sql import change_query

pytest.importorskip("duckdb")

SQL = Path(__file__).resolve().parents[2] / "sql"
VARIABLE = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")
GO = re.compile(r"^\s*GO\s*$", re.MULTILINE | re.IGNORECASE)
AGENT_PROCEDURES = ("sp_add_job", "sp_add_jobstep", "sp_add_jobschedule", "sp_add_jobserver")


def sqlcmd_batches(path: Path, variables: dict[str, str]) -> list[str]:
    """What sqlcmd sends: ``$(Name)`` replaced by ``-v Name=value`` (an undefined one is an
    error, as in sqlcmd), then the batches between ``GO`` lines (comments are sent as text)."""

    def value(match: re.Match[str]) -> str:
        if match.group(1) not in variables:
            raise KeyError(f"'{match.group(1)}' scripting variable not defined")
        return variables[match.group(1)]

    text = VARIABLE.sub(value, path.read_text())
    return [b for b in GO.split(text) if b.strip() and not _only_comments(b)]


def _only_comments(batch: str) -> bool:
    return all(not line.strip() or line.strip().startswith("--") for line in batch.splitlines())


def connect(emu, user="sa", password=None):
    return _native.connect(
        f"Server=tcp:{emu.host},{emu.port};Encrypt=no",
        user=user,
        password=password or emu.password,
    )


def run(conn, sql, params=None):
    return conn.execute(sql, params).reader().read_all().to_pylist()


SETUP = {
    "DatabaseName": "master",
    "SourceSchema": "dbo",
    "SourceTable": "orders",
    "GatingRole": "cdc_reader_role",
    "ReaderLogin": "cdc_reader",
    "ReaderPassword": "Reader-Passw0rd!",
}


def test_setup_needs_every_variable():
    with pytest.raises(KeyError, match="'ReaderPassword' scripting variable not defined"):
        sqlcmd_batches(SQL / "setup.sql", {k: v for k, v in SETUP.items() if k != "ReaderPassword"})


def test_setup_leaves_a_reader_that_check_passes(emulator):
    conn = connect(emulator)
    run(conn, "CREATE TABLE dbo.orders (id INT NOT NULL PRIMARY KEY, amount DECIMAL(18,2))")
    batches = sqlcmd_batches(SQL / "setup.sql", SETUP)
    assert len(batches) == 5
    results = [run(conn, batch) for batch in batches]
    (instance,) = results[-1]  # part 5 lists what is captured
    assert (instance["capture_instance"], instance["role_name"]) == (
        "dbo_orders",
        "cdc_reader_role",
    )
    assert instance["captured_column_list"] == "[id], [amount]"
    conn.close()

    emulator.set_polling_interval(3600)  # the capture job runs
    options = {
        "connectionString": f"Server=tcp:{emulator.host},{emulator.port};Encrypt=no",
        "user": SETUP["ReaderLogin"],
        "password": SETUP["ReaderPassword"],
    }
    report = check(options, ["dbo_orders"])
    assert report.ok, [(i.name, i.detail, i.fix) for i in report.failures]
    assert {i.name for i in report.items if i.status == "pass"} >= {
        "login",
        "cdc_enabled",
        "instance",
        "source_select",
        "gating_role",
        "change_table_select",
        "commit_times",
    }
    # and the reader reads the change data with the stream's own query
    reader = connect(emulator, SETUP["ReaderLogin"], SETUP["ReaderPassword"])
    admin = connect(emulator)
    run(admin, "INSERT INTO dbo.orders VALUES (1, 9.50)")
    emulator.scan()
    low = reader.scalar("SELECT sys.fn_cdc_get_min_lsn(N'dbo_orders')")
    high = reader.scalar("SELECT sys.fn_cdc_get_max_lsn()")
    sql = change_query(
        "dbo_orders", [("id", "int"), ("amount", "decimal")], include_command_id=True
    )
    rows = run(reader, sql, [low, high])
    assert [(r["__$operation"], r["__$command_id"], r["id"]) for r in rows] == [(2, 1, 1)]
    reader.close()
    admin.close()


def test_the_setup_reader_streams_with_exactly_the_scripts_grants(emulator):
    """The data source's driver (offsets, planning) and task (the change read) as the login of
    setup.sql, with nothing but its grants."""
    admin = connect(emulator)
    run(admin, "CREATE TABLE dbo.orders (id INT NOT NULL PRIMARY KEY, amount DECIMAL(18,2))")
    for batch in sqlcmd_batches(SQL / "setup.sql", SETUP):
        run(admin, batch)
    run(admin, "INSERT INTO dbo.orders VALUES (1, 9.50), (2, 1.25)")
    run(admin, "UPDATE dbo.orders SET amount = 2.00 WHERE id = 2")
    emulator.scan()
    options = parse_options(
        {
            "connectionString": f"Server=tcp:{emulator.host},{emulator.port};Encrypt=no",
            "user": SETUP["ReaderLogin"],
            "password": SETUP["ReaderPassword"],
            "captureInstance": "dbo_orders",
        }
    )
    client = CdcClient(options)
    schema = to_struct(infer_schema(client))
    client.close()
    reader = AdmissionStreamReader(options, schema, 4)
    start = reader.initialOffset()
    if HAS_ADMISSION_CONTROL:
        from pyspark.sql.streaming.datasource import ReadAllAvailable  # noqa: PLC0415 (4.2+)

        end = reader.latestOffset(start, ReadAllAvailable())
    else:
        end = reader.latestOffset()
    rows = [
        row for p in reader.partitions(start, end) for b in reader.read(p) for row in b.to_pylist()
    ]
    reader.stop()
    admin.close()
    assert [(r["_operation"], r["id"], str(r["amount"])) for r in rows] == [
        (2, 1, "9.50"),
        (2, 2, "1.25"),
        (3, 2, "1.25"),
        (4, 2, "2.00"),
    ]


def test_heartbeat_update_moves_the_max_lsn_of_a_quiet_database(emulator):
    text = (SQL / "heartbeat.sql").read_text()
    batches = sqlcmd_batches(SQL / "heartbeat.sql", {"DatabaseName": "master"})
    agent = [b for b in batches if any(p in b for p in AGENT_PROCEDURES)]
    assert len(agent) == 1  # the emulator has no SQL Server Agent: the job's step runs below
    (step,) = re.findall(r"@command = N'((?:[^']|'')*)'", agent[0])
    assert step == "UPDATE dbo.cdc_heartbeat SET beat_at = SYSUTCDATETIME() WHERE id = 1;"
    assert "@freq_subday_type = 2" in text
    assert "@freq_subday_interval = 10" in text

    conn = connect(emulator)
    run(conn, "EXEC sys.sp_cdc_enable_db")
    for batch in batches:
        if batch not in agent:
            run(conn, batch)
    emulator.scan()
    before = run(conn, "SELECT sys.fn_cdc_get_max_lsn() AS m")[0]["m"]
    for _ in range(3):  # three beats of the job
        run(conn, step.replace("''", "'"))
        emulator.scan()
    after = run(conn, "SELECT sys.fn_cdc_get_max_lsn() AS m")[0]["m"]
    assert after > before
    beats = run(
        conn,
        "SELECT __$operation AS op FROM cdc.fn_cdc_get_all_changes_dbo_cdc_heartbeat("
        "sys.fn_cdc_get_min_lsn(N'dbo_cdc_heartbeat'), sys.fn_cdc_get_max_lsn(), N'all')",
    )
    assert beats == [{"op": 4}] * 3
    conn.close()
