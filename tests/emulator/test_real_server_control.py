"""The real-server control API (tests/real_server.py), driven against the emulator as if it
were a real server: its statements are SQL Server's documented procedures, so they must run
here too. (Creating and dropping the test database needs CREATE DATABASE, which the emulator
does not have: docs/development.md lists it among what a first real-server run confirms.)"""

from __future__ import annotations

import pytest

from real_server import RealServer, parse_connection_string

pytest.importorskip("duckdb")


@pytest.fixture
def real(emulator):
    server = RealServer(emulator.host, emulator.port, "sa", emulator.password, "master", "no")
    server.sql("CREATE TABLE dbo.t (id int NOT NULL PRIMARY KEY, v int)")
    server.sql("EXEC sys.sp_cdc_enable_db")
    server.sql(
        "EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N't', "
        "@role_name = NULL"
    )
    emulator.set_polling_interval(None)  # nothing captures but the test's scans
    yield server
    server.close()


def _lsns(server: RealServer) -> list[bytes]:
    rows = server.sql("SELECT __$start_lsn AS l FROM cdc.dbo_t_CT ORDER BY __$start_lsn")
    return [bytes(r["l"]) for r in rows]


def test_scan_captures_what_the_log_holds(real):
    real.sql("INSERT INTO dbo.t VALUES (1, 1)")
    assert _lsns(real) == []
    real.scan()
    assert len(_lsns(real)) == 1


def test_cleanup_below_moves_the_low_endpoint_and_deletes_older_changes(real):
    for i in range(3):
        real.sql(f"INSERT INTO dbo.t VALUES ({i}, {i})")
        real.scan()
    lsns = _lsns(real)
    assert len(lsns) == 3
    third = lsns[-1]
    real.cleanup_below("dbo_t", third)
    assert _lsns(real) == [third]
    (row,) = real.sql("SELECT sys.fn_cdc_get_min_lsn(N'dbo_t') AS m")
    assert bytes(row["m"]) == third


def test_set_retention_changes_the_cleanup_job(real):
    real.set_retention(10080)
    jobs = {r["job_type"]: r["retention"] for r in real.sql("EXEC sys.sp_cdc_help_jobs")}
    assert jobs["cleanup"] == 10080


def test_the_environment_names_a_sysadmin_and_the_password_stays_out_of_the_repr(monkeypatch):
    monkeypatch.setenv(
        "MSSQL_CDC_TEST_SERVER",
        "Server=tcp:db.example,1533;UID=sa;PWD=Secret-1;Encrypt=strict;TrustServerCertificate=no",
    )
    server = RealServer.from_environment()
    assert (server.host, server.port, server.user, server.encrypt, server.trust) == (
        "db.example",
        1533,
        "sa",
        "strict",
        "no",
    )
    assert "Secret-1" not in repr(server)
    assert parse_connection_string("A=1; b = two ;c")["b"] == "two"
