"""What the pre-flight check reads from the emulator, each rule as its Microsoft reference page
states it: sys.databases, sys.sp_cdc_help_jobs, msdb.dbo.sp_help_job,
sys.dm_cdc_log_scan_sessions, IS_ROLEMEMBER, OBJECT_NAME and a server without TLS."""

from __future__ import annotations

import datetime as dt

import pytest

from mssql_cdc import _native
from mssql_cdc.errors import SqlServerError

pytest.importorskip("duckdb")

PASSWORD = "Reader-Passw0rd!"


def connect(emu, user="sa", password=None, encrypt="no"):
    return _native.connect(
        f"Server=tcp:{emu.host},{emu.port};Encrypt={encrypt};TrustServerCertificate=yes",
        user=user,
        password=password or emu.password,
    )


def rows(conn, sql, params=None):
    return conn.execute(sql, params).reader().read_all().to_pylist()


@pytest.fixture
def admin(emulator):
    conn = connect(emulator)
    rows(conn, "CREATE TABLE dbo.t (id INT NOT NULL PRIMARY KEY, v INT)")
    rows(conn, f"CREATE LOGIN reader WITH PASSWORD = '{PASSWORD}'")
    rows(conn, "CREATE USER reader FOR LOGIN reader")
    yield conn
    conn.close()


def enable(conn, role="NULL"):
    rows(conn, "EXEC sys.sp_cdc_enable_db")
    rows(
        conn,
        "EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N't', "
        f"@role_name = {role}",
    )


def test_sys_databases_shows_cdc_and_snapshot_isolation_to_any_login(emulator, admin):
    reader = connect(emulator, "reader", PASSWORD)
    query = (
        "SELECT name, is_cdc_enabled, snapshot_isolation_state, snapshot_isolation_state_desc "
        "FROM sys.databases WHERE name = DB_NAME()"
    )
    assert rows(reader, query) == [
        {
            "name": "master",
            "is_cdc_enabled": False,
            "snapshot_isolation_state": 0,
            "snapshot_isolation_state_desc": "OFF",
        }
    ]
    enable(admin)
    rows(admin, "ALTER DATABASE master SET ALLOW_SNAPSHOT_ISOLATION ON")
    (row,) = rows(reader, query)
    assert (row["is_cdc_enabled"], row["snapshot_isolation_state"]) == (True, 1)
    reader.close()


def test_help_jobs_lists_the_jobs_after_the_first_table_for_db_owner_only(emulator, admin):
    rows(admin, "EXEC sys.sp_cdc_enable_db")
    assert rows(admin, "EXEC sys.sp_cdc_help_jobs") == []  # no table enabled yet
    enable(admin)
    jobs = {j["job_type"]: j for j in rows(admin, "EXEC sys.sp_cdc_help_jobs")}
    assert jobs["capture"]["job_name"] == "cdc.master_capture"
    assert (jobs["capture"]["continuous"], jobs["capture"]["pollinginterval"]) == (True, 5)
    assert (jobs["cleanup"]["retention"], jobs["cleanup"]["threshold"]) == (4320, 5000)
    reader = connect(emulator, "reader", PASSWORD)
    with pytest.raises(SqlServerError) as denied:
        rows(reader, "EXEC sys.sp_cdc_help_jobs")
    assert denied.value.number == 15247
    reader.close()


def test_sp_help_job_says_whether_the_capture_job_runs(emulator, admin):
    enable(admin)
    sql = "EXEC msdb.dbo.sp_help_job @job_name = @P1, @job_aspect = N'JOB'"
    assert rows(admin, sql, ["cdc.master_capture"])[0]["current_execution_status"] == 4
    emulator.set_polling_interval(3600)
    assert rows(admin, sql, ["cdc.master_capture"])[0]["current_execution_status"] == 1
    emulator.stop_capture_job()
    assert rows(admin, sql, ["cdc.master_capture"])[0]["current_execution_status"] == 4
    with pytest.raises(SqlServerError) as missing:
        rows(admin, sql, ["no_such_job"])
    assert missing.value.number == 14262
    reader = connect(emulator, "reader", PASSWORD)
    with pytest.raises(SqlServerError) as denied:
        rows(reader, sql, ["cdc.master_capture"])
    assert denied.value.number == 229
    reader.close()


def test_scan_sessions_record_latency_and_empty_scans_for_db_owner(emulator, admin):
    enable(admin)
    emulator.set_clock(dt.datetime(2026, 12, 1, 12, 0, 0), freeze=True)
    rows(admin, "INSERT INTO dbo.t VALUES (1, 1)")
    emulator.advance_clock(dt.timedelta(seconds=7))  # the scan runs 7 s after the commit
    emulator.scan()
    emulator.scan()  # nothing to read: counted as an empty scan
    sessions = rows(
        admin,
        "SELECT session_id, scan_phase, tran_count, latency, empty_scan_count "
        "FROM sys.dm_cdc_log_scan_sessions ORDER BY session_id",
    )
    assert sessions == [
        {
            "session_id": 0,
            "scan_phase": "Aggregate",
            "tran_count": 2,
            "latency": 7,
            "empty_scan_count": 1,
        },
        {
            "session_id": 1,
            "scan_phase": "Done",
            "tran_count": 2,
            "latency": 7,
            "empty_scan_count": 1,
        },
    ]
    reader = connect(emulator, "reader", PASSWORD)
    with pytest.raises(SqlServerError) as denied:
        rows(reader, "SELECT * FROM sys.dm_cdc_log_scan_sessions")
    assert denied.value.number == 300
    reader.close()


def test_is_rolemember_and_object_name_follow_membership_and_visibility(emulator, admin):
    enable(admin, "N'gate'")
    reader = connect(emulator, "reader", PASSWORD)
    member = "SELECT IS_ROLEMEMBER(N'gate') AS g, IS_ROLEMEMBER(N'none') AS n"
    assert rows(reader, member) == [{"g": 0, "n": None}]
    rows(admin, "ALTER ROLE gate ADD MEMBER reader")
    assert rows(reader, member) == [{"g": 1, "n": None}]
    rows(admin, "GRANT SELECT ON cdc.change_tables TO reader")
    names = (
        "SELECT OBJECT_SCHEMA_NAME(source_object_id) AS s, OBJECT_NAME(source_object_id) AS t "
        "FROM cdc.change_tables"
    )
    assert rows(reader, names) == [{"s": None, "t": None}]  # no permission on dbo.t: hidden
    rows(admin, "GRANT SELECT ON dbo.t TO reader")
    assert rows(reader, names) == [{"s": "dbo", "t": "t"}]
    reader.close()


def test_a_server_without_tls_refuses_a_client_that_requires_it(emulator):
    emulator.set_tls_available(False)
    with pytest.raises(SqlServerError):
        connect(emulator, encrypt="yes")
    conn = connect(emulator, encrypt="no")  # no encryption at all, login included
    assert rows(conn, "SELECT 1 AS one") == [{"one": 1}]
    conn.close()
