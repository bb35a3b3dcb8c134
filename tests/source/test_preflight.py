"""``mssql_cdc.check`` / ``mssql-cdc check`` against emulator set-ups each wrong in one way:
the report names exactly that failure and its fix, and everything else passes (or is skipped
for a reason the report states)."""

from __future__ import annotations

import json
import socket

import pytest

from mssql_cdc import _native, check
from mssql_cdc.cli import main

pytest.importorskip("duckdb")

READER = "cdc_reader"
PASSWORD = "Reader-Passw0rd!"
ROLE = "cdc_gate"
CI = "dbo_orders"


def admin(emu, *statements: str) -> None:
    conn = _native.connect(
        f"Server=tcp:{emu.host},{emu.port};Encrypt=no", user="sa", password=emu.password
    )
    try:
        for sql in statements:
            conn.execute(sql).reader().read_all()
    finally:
        conn.close()


def prepare(emu, *, enable_db=True, role=ROLE, grants=None, member=True, job=True):
    """The set-up every test starts from: dbo.orders captured as dbo_orders with a gating
    role, a reader login with exactly the grants docs/permissions.md lists (``grants`` and
    ``member`` leave some out), the capture job running (``job``)."""
    admin(
        emu,
        "CREATE TABLE dbo.orders (id INT NOT NULL PRIMARY KEY, amount DECIMAL(18,2), "
        "note NVARCHAR(50))",
        f"CREATE LOGIN {READER} WITH PASSWORD = '{PASSWORD}'",
        f"CREATE USER {READER} FOR LOGIN {READER}",
    )
    if not enable_db:
        return
    role_arg = f"N'{role}'" if role else "NULL"
    admin(
        emu,
        "EXEC sys.sp_cdc_enable_db",
        "EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N'orders', "
        f"@role_name = {role_arg}, @supports_net_changes = 0",
    )
    if grants is None:
        grants = ["dbo.orders", f"cdc.[{CI}_CT]", "cdc.lsn_time_mapping", "cdc.change_tables"]
    admin(emu, *[f"GRANT SELECT ON {g} TO {READER}" for g in grants])
    if role and member:
        admin(emu, f"ALTER ROLE {role} ADD MEMBER {READER}")
    if job:
        emu.set_polling_interval(3600)  # running, but no scan during the test


def options(emu, user=READER, password=PASSWORD, encrypt="no", **extra):
    return {
        "connectionString": f"Server=tcp:{emu.host},{emu.port};Encrypt={encrypt};"
        "TrustServerCertificate=yes",
        "user": user,
        "password": password,
        **extra,
    }


def statuses(report, ci=None):
    return {i.name: i.status for i in report.items if i.capture_instance == ci}


def only_failure(report):
    failures = report.failures
    assert len(failures) == 1, [(f.name, f.detail) for f in failures]
    return failures[0]


def test_everything_right_as_the_reader(emulator):
    prepare(emulator)
    report = check(options(emulator), [CI])
    assert report.ok, [(i.name, i.detail) for i in report.failures]
    assert statuses(report, CI) == {
        "instance": "pass",
        "source_select": "pass",
        "gating_role": "pass",
        "change_table_select": "pass",
    }
    general = statuses(report)
    assert [general[n] for n in ("reachable", "tls", "login", "cdc_enabled", "time_zone")] == [
        "pass"
    ] * 5
    # a least-privilege reader cannot see the jobs: skipped, with the reason
    job = report.item("capture_job")
    assert job.status == "skip"
    assert "db_owner" in job.detail
    assert report.item("snapshot_isolation").status == "skip"
    assert report.item("gating_role", CI).detail == "member of the gating role 'cdc_gate'"


def test_everything_right_as_sa_sees_the_jobs(emulator):
    prepare(emulator)
    report = check(options(emulator, user="sa", password=emulator.password), [CI])
    assert report.ok
    assert report.item("capture_job").status == "pass"
    assert "cdc.master_capture is running" in report.item("capture_job").detail
    assert report.item("capture_latency").status == "pass"
    retention = report.item("retention")
    assert retention.status == "pass"
    assert retention.detail.startswith("retention 4,320 min (72 h)")


def test_cdc_not_enabled_on_the_database(emulator):
    prepare(emulator, enable_db=False)
    report = check(options(emulator), [CI])
    failure = only_failure(report)
    assert failure.name == "cdc_enabled"
    assert failure.fix.startswith("As sysadmin: USE [master]; EXEC sys.sp_cdc_enable_db;")
    assert statuses(report, CI) == dict.fromkeys(
        ("instance", "source_select", "gating_role", "change_table_select"), "skip"
    )


def test_capture_instance_missing(emulator):
    prepare(emulator)
    report = check(options(emulator), ["dbo_nope"])
    failure = only_failure(report)
    assert (failure.name, failure.capture_instance) == ("instance", "dbo_nope")
    assert "instances this login can read: dbo_orders" in failure.detail
    assert "@capture_instance = N'dbo_nope'" in failure.fix


def test_no_select_on_the_source_table(emulator):
    # without any permission on dbo.orders the login cannot even see its name (metadata
    # visibility), so the fix names the procedure that shows it
    prepare(emulator, grants=[f"cdc.[{CI}_CT]", "cdc.lsn_time_mapping", "cdc.change_tables"])
    failure = only_failure(check(options(emulator), [CI]))
    assert (failure.name, failure.capture_instance) == ("source_select", CI)
    assert "cannot even see its name" in failure.detail
    assert failure.fix == (
        "As db_owner, EXEC sys.sp_cdc_help_change_data_capture names the source table; "
        f"GRANT SELECT ON <source table> TO [{READER}];"
    )


def test_select_denied_on_the_source_table(emulator):
    # a DENY leaves the name visible (the login holds a permission on it), so the fix is exact
    prepare(emulator, grants=[f"cdc.[{CI}_CT]", "cdc.lsn_time_mapping", "cdc.change_tables"])
    admin(emulator, f"GRANT INSERT ON dbo.orders TO {READER}")
    failure = only_failure(check(options(emulator), [CI]))
    assert (failure.name, failure.capture_instance) == ("source_select", CI)
    assert failure.fix == f"GRANT SELECT ON [dbo].[orders] TO [{READER}];"


def test_a_captured_column_denied_fails_the_source_select(emulator):
    """SELECT on the table but DENY on one captured column (error 230 when read)."""
    prepare(emulator)
    admin(emulator, f"DENY SELECT ON dbo.orders (note) TO {READER}")
    failure = only_failure(check(options(emulator), [CI]))
    assert (failure.name, failure.capture_instance) == ("source_select", CI)
    assert "not its captured column(s) [note]" in failure.detail
    assert failure.fix == f"REVOKE SELECT ON [dbo].[orders] ([note]) FROM [{READER}];"


def test_not_in_the_gating_role(emulator):
    prepare(emulator, member=False)
    failure = only_failure(check(options(emulator), [CI]))
    assert (failure.name, failure.capture_instance) == ("gating_role", CI)
    assert failure.fix == f"ALTER ROLE [{ROLE}] ADD MEMBER [{READER}];"


def test_no_select_on_the_change_table(emulator):
    prepare(emulator, grants=["dbo.orders", "cdc.lsn_time_mapping", "cdc.change_tables"])
    failure = only_failure(check(options(emulator), [CI]))
    assert (failure.name, failure.capture_instance) == ("change_table_select", CI)
    assert failure.fix == f"GRANT SELECT ON cdc.[{CI}_CT] TO [{READER}];"


def test_no_select_on_the_commit_time_table(emulator):
    """Every change read joins cdc.lsn_time_mapping; sql/setup.sql grants it explicitly."""
    prepare(emulator, grants=["dbo.orders", f"cdc.[{CI}_CT]", "cdc.change_tables"])
    failure = only_failure(check(options(emulator), [CI]))
    assert (failure.name, failure.capture_instance) == ("commit_times", None)
    assert failure.fix == f"GRANT SELECT ON cdc.lsn_time_mapping TO [{READER}];"


def test_without_the_metadata_grant_source_and_role_are_reported_together(emulator):
    prepare(emulator, grants=[f"cdc.[{CI}_CT]", "cdc.lsn_time_mapping"], member=False)
    report = check(options(emulator), [CI])
    failure = only_failure(report)
    assert failure.name == "source_select"
    assert "GRANT SELECT ON <source table>" in failure.fix
    assert "ALTER ROLE <role_name>" in failure.fix
    assert report.item("gating_role", CI).status == "skip"


def test_capture_job_stopped(emulator):
    prepare(emulator, job=False)
    report = check(options(emulator, user="sa", password=emulator.password), [CI])
    failure = only_failure(report)
    assert failure.name == "capture_job"
    assert "not running" in failure.detail
    assert "EXEC sys.sp_cdc_start_job @job_type = N'capture';" in failure.fix


def test_retention_shorter_than_twice_the_schedule(emulator):
    prepare(emulator)
    emulator.set_retention(600)  # 10 h; a daily job needs 48 h
    report = check(options(emulator, user="sa", password=emulator.password), [CI])
    failure = only_failure(report)
    assert failure.name == "retention"
    assert "@retention = 2880;" in failure.fix
    hourly = check(options(emulator, user="sa", password=emulator.password), [CI], schedule_hours=1)
    assert hourly.ok


def test_snapshot_isolation_asked_for_but_not_allowed(emulator):
    prepare(emulator)
    report = check(options(emulator, isolationLevel="snapshot"), [CI])
    failure = only_failure(report)
    assert failure.name == "snapshot_isolation"
    assert failure.fix == "As a DBA: ALTER DATABASE [master] SET ALLOW_SNAPSHOT_ISOLATION ON;"
    admin(emulator, "ALTER DATABASE master SET ALLOW_SNAPSHOT_ISOLATION ON")
    assert check(options(emulator), [CI], snapshot_isolation=True).ok


def test_bad_password(emulator):
    prepare(emulator)
    report = check(options(emulator, password="wrong-one"), [CI])
    failure = only_failure(report)
    assert failure.name == "login"
    assert "18456" in failure.detail
    assert "wrong-one" not in json.dumps(report.to_dict())
    assert statuses(report)["reachable"] == "pass"
    assert statuses(report, CI) == {}  # nothing per instance without a connection


def test_tls_required_but_the_server_offers_none(emulator):
    prepare(emulator)
    emulator.set_tls_available(False)
    report = check(options(emulator, encrypt="yes"), [CI])
    failure = only_failure(report)
    assert failure.name == "tls"
    assert "offers no TLS" in failure.fix
    assert "Encrypt=no" in failure.fix
    assert check(options(emulator, encrypt="no"), [CI]).ok
    emulator.set_tls_available(True)
    encrypted = check(options(emulator, encrypt="yes"), [CI])
    assert encrypted.ok
    assert encrypted.item("tls").detail == (
        "Encrypt=yes: the session is encrypted; TrustServerCertificate=yes, so the server's "
        "certificate was not verified"
    )


def test_server_not_reachable():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    report = check(
        {"connectionString": f"Server=tcp:127.0.0.1,{port};Encrypt=no", "connectTimeout": "5"},
        [CI],
    )
    failure = only_failure(report)
    assert failure.name == "reachable"
    assert "firewall" in failure.fix


def test_cli_prints_each_line_and_exits_1_on_a_failure(emulator, monkeypatch, capsys):
    prepare(emulator, member=False)
    monkeypatch.setenv("MSSQL_CDC_PASSWORD", PASSWORD)
    argv = [
        "check",
        "--server",
        f"{emulator.host},{emulator.port}",
        "--encrypt",
        "no",
        "--user",
        READER,
        "--capture-instance",
        CI,
    ]
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert "PASS  login" in out
    assert f"FAIL  gating_role          [{CI}] " in out
    assert f"      fix: ALTER ROLE [{ROLE}] ADD MEMBER [{READER}];" in out
    assert out.rstrip().endswith("1 check failed")
    assert PASSWORD not in out
    admin(emulator, f"ALTER ROLE {ROLE} ADD MEMBER {READER}")
    assert main([*argv, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is True
    assert {i["name"] for i in report["items"] if i["status"] == "fail"} == set()


def test_cli_refuses_a_password_in_the_connection_string(capsys):
    argv = ["check", "--connection-string", "Server=x;PWD=secret", "--capture-instance", CI]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "secret" not in err
    assert "MSSQL_CDC_PASSWORD" in err


def test_report_is_typed_and_frozen(emulator):
    prepare(emulator)
    report = check(options(emulator), [CI])
    with pytest.raises(AttributeError):
        report.items = ()  # type: ignore[misc]
