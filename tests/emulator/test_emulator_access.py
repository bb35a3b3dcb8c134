"""Permissions (error 229, gating roles), lock waits (1222), SNAPSHOT isolation, and commit
times across a DST fall-back hour; each rule its own test."""

from __future__ import annotations

import datetime as dt
import logging
import threading

import pytest

pytds = pytest.importorskip("pytds")

PASSWORD = "Reader-Passw0rd!"


def connect(emu, user="sa", password=None):
    return pytds.connect(
        emu.host,
        port=emu.port,
        user=user,
        password=password or emu.password,
        autocommit=True,
    )


@pytest.fixture
def admin(emulator):
    conn = connect(emulator)
    cur = conn.cursor()
    cur.execute("CREATE TABLE dbo.t (id int NOT NULL PRIMARY KEY, v int)")
    cur.execute("EXEC sys.sp_cdc_enable_db")
    cur.execute("INSERT INTO dbo.t VALUES (1, 1)")
    yield cur
    conn.close()


def enable(cur, role="NULL"):
    cur.execute(
        "EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N't', "
        f"@role_name = {role}"
    )


def make_reader(cur):
    cur.execute(f"CREATE LOGIN reader WITH PASSWORD = '{PASSWORD}'")
    cur.execute("CREATE USER reader FOR LOGIN reader")
    cur.execute("GRANT SELECT ON dbo.t TO reader")


def changes_sql():
    return (
        "SELECT count(*) FROM cdc.fn_cdc_get_all_changes_dbo_t("
        "sys.fn_cdc_get_min_lsn('dbo_t'), sys.fn_cdc_get_max_lsn(), N'all')"
    )


def test_login_without_select_on_change_data_gets_229_and_zero_min_lsn(emulator, admin):
    enable(admin)
    make_reader(admin)
    admin.execute("INSERT INTO dbo.t VALUES (2, 2)")
    emulator.scan()
    with connect(emulator, "reader", PASSWORD) as conn, conn.cursor() as cur:
        cur.execute("SELECT v FROM dbo.t WHERE id = 1")
        assert cur.fetchall() == [(1,)]
        cur.execute("SELECT sys.fn_cdc_get_min_lsn('dbo_t')")
        assert cur.fetchone()[0] == bytes(10)
        with pytest.raises(pytds.tds_base.Error) as info:
            cur.execute(
                "SELECT * FROM cdc.fn_cdc_get_all_changes_dbo_t(0x0000002A000000100001, "
                "sys.fn_cdc_get_max_lsn(), N'all')"
            )
        assert info.value.msg_no == 229
        assert "fn_cdc_get_all_changes_dbo_t" in str(info.value)
    admin.execute("GRANT SELECT ON SCHEMA::cdc TO reader")
    with connect(emulator, "reader", PASSWORD) as conn, conn.cursor() as cur:
        cur.execute(changes_sql())
        assert cur.fetchone() == (1,)
        cur.execute("SELECT sys.fn_cdc_get_min_lsn('dbo_t')")
        assert cur.fetchone()[0] != bytes(10)


def test_gating_role_is_required_for_change_data(emulator, admin):
    enable(admin, role="N'cdc_reader'")
    make_reader(admin)
    admin.execute("GRANT SELECT ON SCHEMA::cdc TO reader")
    emulator.scan()
    with connect(emulator, "reader", PASSWORD) as conn, conn.cursor() as cur:
        with pytest.raises(pytds.tds_base.Error) as info:
            cur.execute(changes_sql())
        assert info.value.msg_no == 229
    admin.execute("ALTER ROLE cdc_reader ADD MEMBER reader")
    with connect(emulator, "reader", PASSWORD) as conn, conn.cursor() as cur:
        cur.execute(changes_sql())
        assert cur.fetchone() == (0,)


def test_select_without_permission_on_a_table_is_229(emulator, admin):
    admin.execute(f"CREATE LOGIN nobody WITH PASSWORD = '{PASSWORD}'")
    admin.execute("CREATE USER nobody FOR LOGIN nobody")
    with connect(emulator, "nobody", PASSWORD) as conn, conn.cursor() as cur:
        with pytest.raises(pytds.tds_base.Error) as info:
            cur.execute("SELECT * FROM dbo.t")
        assert info.value.msg_no == 229
        with pytest.raises(pytds.tds_base.Error) as info:
            cur.execute(
                "EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', "
                "@source_name = N't', @role_name = NULL"
            )
        assert info.value.msg_no == 15247


def test_wrong_password_of_a_created_login_is_18456(emulator, admin):
    make_reader(admin)
    with pytest.raises(pytds.tds_base.Error) as info:
        connect(emulator, "reader", "wrong")
    assert info.value.msg_no == 18456


def test_read_committed_reader_times_out_with_1222(emulator, admin):
    admin.execute("BEGIN TRAN; UPDATE dbo.t SET v = 2 WHERE id = 1")
    with connect(emulator) as conn, conn.cursor() as cur:
        cur.execute("SET LOCK_TIMEOUT 50")
        with pytest.raises(pytds.tds_base.Error) as info:
            cur.execute("SELECT v FROM dbo.t")
        assert info.value.msg_no == 1222
        cur.execute("SELECT v FROM dbo.t WITH (NOLOCK)")
        assert cur.fetchall() == [(1,)]
    admin.execute("ROLLBACK")


def test_read_committed_reader_waits_until_commit(emulator, admin):
    admin.execute("BEGIN TRAN; UPDATE dbo.t SET v = 2 WHERE id = 1")
    result = []
    with connect(emulator) as conn, conn.cursor() as cur:

        def read():
            cur.execute("SELECT v FROM dbo.t")
            result.extend(cur.fetchall())

        reader = threading.Thread(target=read)
        reader.start()
        locks = emulator.db.locks
        with locks.cond:
            assert locks.cond.wait_for(lambda: locks.waiting, timeout=5)
        assert result == []
        admin.execute("COMMIT")
        reader.join(5)
    assert result == [(2,)]


def test_snapshot_reader_sees_last_committed_without_waiting(emulator, admin):
    admin.execute("ALTER DATABASE master SET ALLOW_SNAPSHOT_ISOLATION ON")
    admin.execute("BEGIN TRAN; UPDATE dbo.t SET v = 2 WHERE id = 1")
    with connect(emulator) as conn, conn.cursor() as cur:
        cur.execute("SET LOCK_TIMEOUT 0; SET TRANSACTION ISOLATION LEVEL SNAPSHOT")
        cur.execute("SELECT v FROM dbo.t")
        assert cur.fetchall() == [(1,)]
    admin.execute("COMMIT")


def test_snapshot_needs_allow_snapshot_isolation(emulator, admin):
    with connect(emulator) as conn, conn.cursor() as cur:
        cur.execute("SET TRANSACTION ISOLATION LEVEL SNAPSHOT")
        with pytest.raises(pytds.tds_base.Error) as info:
            cur.execute("SELECT v FROM dbo.t")
        assert info.value.msg_no == 3952


def test_writers_deadlock_makes_one_a_victim(emulator, admin):
    admin.execute("CREATE TABLE dbo.u (id int)")
    with connect(emulator) as conn, conn.cursor() as other:
        admin.execute("BEGIN TRAN; INSERT INTO dbo.t VALUES (5, 5)")
        other.execute("BEGIN TRAN; INSERT INTO dbo.u VALUES (5)")
        errors = []

        def cross():
            try:
                other.execute("INSERT INTO dbo.t VALUES (6, 6)")
            except pytds.tds_base.Error as exc:
                errors.append(exc.msg_no)

        waiter = threading.Thread(target=cross)
        waiter.start()
        locks = emulator.db.locks
        with locks.cond:
            assert locks.cond.wait_for(lambda: locks.waiting, timeout=5)
        with pytest.raises(pytds.tds_base.Error) as info:
            admin.execute("INSERT INTO dbo.u VALUES (6)")
        assert info.value.msg_no == 1205
        waiter.join(5)
        assert errors == []
        other.execute("COMMIT")


def test_commit_times_follow_local_time_across_dst_fall_back():
    pytest.importorskip("duckdb")
    from mssql_cdc.emulator import Emulator  # noqa: PLC0415 (after the skip: needs duckdb)

    with Emulator(time_zone="Pacific Standard Time") as emu, connect(emu) as conn:
        cur = conn.cursor()
        cur.execute("CREATE TABLE dbo.d (id int PRIMARY KEY)")
        cur.execute("EXEC sys.sp_cdc_enable_db")
        cur.execute(
            "EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N'd', "
            "@role_name = NULL"
        )
        # 2024-11-03 01:30 PDT (08:30 UTC), then 01:30 PST (09:30 UTC), then 02:30 PST
        emu.set_clock(dt.datetime(2024, 11, 3, 8, 30, tzinfo=dt.timezone.utc), freeze=True)
        cur.execute("INSERT INTO dbo.d VALUES (1)")
        emu.advance_clock(dt.timedelta(hours=1))
        cur.execute("INSERT INTO dbo.d VALUES (2)")
        emu.advance_clock(dt.timedelta(hours=1))
        cur.execute("INSERT INTO dbo.d VALUES (3)")
        emu.scan()
        cur.execute(
            "SELECT m.tran_end_time FROM cdc.dbo_d_CT c JOIN cdc.lsn_time_mapping m "
            "ON m.start_lsn = c.__$start_lsn ORDER BY c.__$start_lsn"
        )
        assert [r[0] for r in cur.fetchall()] == [
            dt.datetime(2024, 11, 3, 1, 30),
            dt.datetime(2024, 11, 3, 1, 30),
            dt.datetime(2024, 11, 3, 2, 30),
        ]
        cur.execute("SELECT CURRENT_TIMEZONE_ID()")
        assert cur.fetchone() == ("Pacific Standard Time",)


def test_a_login_password_never_reaches_a_log(emulator, caplog):
    """sqlglot logs the text of a statement it keeps as a command; CREATE LOGIN's holds a
    password, so the emulator drops that record."""
    # Each logger's own level is set: an in-process CLI test leaves "mssql_cdc" at its
    # --log-level, which the root's level alone would not override.
    with (
        caplog.at_level(logging.DEBUG, logger="mssql_cdc"),
        caplog.at_level(logging.DEBUG, logger="sqlglot"),
    ):
        conn = connect(emulator)
        conn.cursor().execute("CREATE LOGIN audited WITH PASSWORD = 'Never-Logged-42'")
        conn.close()
    server_side = [
        r.getMessage() for r in caplog.records if r.name.startswith(("mssql_cdc", "sqlglot"))
    ]
    assert server_side  # the emulator's own records were captured
    assert not [m for m in server_side if "Never-Logged-42" in m]
