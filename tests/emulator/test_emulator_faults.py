"""Injected faults of the emulator's control API, each its own test."""

from __future__ import annotations

import time

import pytest

pytds = pytest.importorskip("pytds")


def connect(emu, **kwargs):
    return pytds.connect(
        emu.host, port=emu.port, user="sa", password=emu.password, autocommit=True, **kwargs
    )


def run(cur, sql):
    cur.execute(sql)
    return cur.fetchall()


def spid_of(cur):
    cur.execute("SELECT @@SPID")
    return cur.fetchone()[0]


def test_drop_during_login_hits_the_next_connection_only(emulator):
    fault = emulator.drop_connection("login")
    with pytest.raises((pytds.tds_base.Error, OSError, EOFError)):
        connect(emulator)
    assert fault.wait(5)
    with connect(emulator) as conn, conn.cursor() as cur:
        cur.execute("SELECT 1")
        assert cur.fetchall() == [(1,)]


def test_drop_mid_result_after_n_rows(emulator):
    with connect(emulator) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE dbo.big (id int)")
        cur.execute("INSERT INTO dbo.big VALUES " + ", ".join(f"({i})" for i in range(500)))
        fault = emulator.drop_connection("mid_result", spid=spid_of(cur), after_rows=100)
        with pytest.raises((pytds.tds_base.Error, OSError, EOFError)):
            run(cur, "SELECT id FROM dbo.big")
        assert fault.wait(5)
        assert fault.hit_spid is not None
    with connect(emulator) as conn, conn.cursor() as cur:
        cur.execute("SELECT count(*) FROM dbo.big")
        assert cur.fetchone() == (500,)


def test_drop_mid_result_after_bytes(emulator):
    with connect(emulator) as conn, conn.cursor() as cur:
        fault = emulator.drop_connection("mid_result", spid=spid_of(cur), after_bytes=20)
        with pytest.raises((pytds.tds_base.Error, OSError, EOFError)):
            run(cur, "SELECT N'a long enough value to be cut in the middle'")
        assert fault.wait(5)


def test_drop_between_requests_after_n_answers(emulator):
    with connect(emulator) as conn, conn.cursor() as cur:
        fault = emulator.drop_connection("between_requests", spid=spid_of(cur), after_requests=2)
        cur.execute("SELECT 1")
        assert cur.fetchall() == [(1,)]
        cur.execute("SELECT 2")
        assert cur.fetchall() == [(2,)]
        assert fault.wait(5)
        with pytest.raises((pytds.tds_base.Error, OSError, EOFError)):
            run(cur, "SELECT 3")


def test_kill_drops_a_session_now(emulator):
    with connect(emulator) as conn, conn.cursor() as cur:
        spid = spid_of(cur)
        assert spid in emulator.sessions()
        assert emulator.kill(spid)
        with pytest.raises((pytds.tds_base.Error, OSError, EOFError)):
            run(cur, "SELECT 1")
    assert not emulator.kill(9999)


def test_deadlock_victim_gets_1205_and_its_transaction_is_rolled_back(emulator):
    with connect(emulator) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE dbo.t (id int)")
        cur.execute("BEGIN TRAN; INSERT INTO dbo.t VALUES (1)")
        fault = emulator.deadlock_victim(spid=spid_of(cur))
        with pytest.raises(pytds.tds_base.Error) as info:
            cur.execute("INSERT INTO dbo.t VALUES (2)")
        assert fault.wait(1)
        assert info.value.msg_no == 1205
        assert info.value.severity == 13
        assert "chosen as the deadlock victim" in str(info.value)
        cur.execute("SELECT @@TRANCOUNT, (SELECT count(*) FROM dbo.t)")
        assert cur.fetchone() == (0, 0)


def test_fail_statement_fails_the_next_statement_once_and_the_session_goes_on(emulator):
    with connect(emulator) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE dbo.t (id int)")
        cur.execute("BEGIN TRAN; INSERT INTO dbo.t VALUES (1)")
        fault = emulator.fail_statement(number=50000, message="chaos", spid=spid_of(cur))
        with pytest.raises(pytds.tds_base.Error) as info:
            cur.execute("INSERT INTO dbo.t VALUES (2)")
        assert fault.wait(1)
        assert (info.value.msg_no, info.value.severity) == (50000, 16)
        assert "chaos" in str(info.value)
        cur.execute("INSERT INTO dbo.t VALUES (3); COMMIT")
        cur.execute("SELECT @@TRANCOUNT, (SELECT count(*) FROM dbo.t)")
        assert cur.fetchone() == (0, 2)


def test_refuse_logins_for_a_while_then_accept(emulator):
    emulator.refuse_logins(60)
    with pytest.raises(pytds.tds_base.Error) as info:
        connect(emulator)
    assert info.value.msg_no == 18456
    emulator.refuse_logins(0)
    with connect(emulator) as conn, conn.cursor() as cur:
        cur.execute("SELECT 1")
        assert cur.fetchall() == [(1,)]


def test_delay_responses_holds_each_answer(emulator):
    with connect(emulator) as conn, conn.cursor() as cur:
        emulator.delay_responses(0.2)
        started = time.monotonic()
        cur.execute("SELECT 1")
        assert cur.fetchall() == [(1,)]
        assert time.monotonic() - started >= 0.2
        emulator.delay_responses(0)


def test_stop_and_start_the_capture_job(emulator):
    with connect(emulator) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE dbo.c (id int PRIMARY KEY)")
        cur.execute("EXEC sys.sp_cdc_enable_db")
        cur.execute(
            "EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N'c', "
            "@role_name = NULL"
        )
        emulator.scan()
        cur.execute("SELECT sys.fn_cdc_get_max_lsn()")
        before = cur.fetchone()[0]
        emulator.set_polling_interval(0.01)
        emulator.stop_capture_job()
        assert not emulator.db.capture_job.running
        scans = emulator.scan_count
        cur.execute("INSERT INTO dbo.c VALUES (1)")
        assert emulator.scan_count == scans
        cur.execute("SELECT sys.fn_cdc_get_max_lsn()")
        assert cur.fetchone()[0] == before
        emulator.start_capture_job()
        assert emulator.wait_for_scans(scans + 2)
        cur.execute("SELECT sys.fn_cdc_get_max_lsn()")
        assert cur.fetchone()[0] > before
        cur.execute("EXEC sys.sp_cdc_stop_job")
        assert not emulator.db.capture_job.running


def test_inject_fault_dispatches_by_name(emulator):
    fault = emulator.inject_fault("drop_connection", at="login")
    assert fault is not None
    assert fault.point == "login"
    with pytest.raises(ValueError, match="unknown fault"):
        emulator.inject_fault("meteor")
    emulator.server.faults.clear()


def test_request_count_counts_each_batch_and_rpc_once(emulator):
    conn = connect(emulator)
    cur = conn.cursor()
    before = emulator.request_count
    run(cur, "SELECT 1")
    run(cur, "SELECT 2; SELECT 3")  # one batch
    cur.execute("SELECT %s", (4,))  # a parameterised query: one RPC
    cur.fetchall()
    assert emulator.request_count - before == 3
    conn.close()
