"""sp_spaceused and sys.dm_exec_session_wait_stats as their Microsoft reference pages state
them: sp_spaceused's result sets for a table and for the database (two, or one with
@oneresultset = 1), error 15009 for what is not a table; a session's waits (its lock waits,
LCK_M_S), each login seeing its own session and sa every session."""

from __future__ import annotations

import pytest

import sqltypes

pytds = pytest.importorskip("pytds")
pytest.importorskip("duckdb")

PASSWORD = "Reader-Passw0rd!"


@pytest.fixture
def cur(sql_server, emulator):
    with sqltypes.connect(sql_server) as conn, conn.cursor() as cursor:
        cursor.execute("CREATE TABLE dbo.t (id INT NOT NULL PRIMARY KEY, name NVARCHAR(40))")
        cursor.execute("INSERT INTO dbo.t VALUES (1, N'a'), (2, N'b'), (3, NULL)")
        yield cursor


def all_rows(cursor, sql):
    cursor.execute(sql)
    out = [cursor.fetchall()] if cursor.description else []
    while cursor.nextset():
        if cursor.description:
            out.append(cursor.fetchall())
    return out


def test_spaceused_of_a_table(cur):
    (rows,) = all_rows(cur, "EXEC sp_spaceused N'dbo.t'")
    ((name, count, reserved, data, index_size, unused),) = rows
    assert (name, count) == ("t", "3".ljust(20))  # rows is char(20)
    for size in (reserved, data, index_size, unused):
        assert size.endswith(" KB")
    kb = [int(s.split()[0]) for s in (reserved, data, index_size, unused)]
    assert kb[0] == kb[1] + kb[2] + kb[3]  # reserved = data + indexes + unused


def test_spaceused_of_the_database(cur):
    database, totals = all_rows(cur, "EXEC sp_spaceused")
    assert database[0][0] == "master"
    assert database[0][1].endswith(" MB")
    assert len(totals[0]) == 4
    (one,) = all_rows(cur, "EXEC sp_spaceused @oneresultset = 1")
    assert one[0] == database[0] + totals[0]


def test_spaceused_of_what_is_not_a_table_is_15009(cur):
    with pytest.raises(pytds.Error) as missing:
        all_rows(cur, "EXEC sp_spaceused N'dbo.nosuch'")
    assert missing.value.msg_no == 15009
    assert str(missing.value.args[0]) == (
        "The object 'dbo.nosuch' does not exist in database 'master' or is invalid for this "
        "operation."
    )


def test_session_wait_stats_count_lock_waits_per_session(sql_server, cur):
    cur.execute("CREATE LOGIN reader WITH PASSWORD = '" + PASSWORD + "'")
    cur.execute("CREATE USER reader FOR LOGIN reader")
    cur.execute("GRANT SELECT ON dbo.t TO reader")
    reader_server = type(sql_server)(
        sql_server.host, sql_server.port, "reader", PASSWORD, "master", sql_server.emulator
    )
    with (
        sqltypes.connect(sql_server) as writer, writer.cursor() as wcur,
        sqltypes.connect(reader_server) as reader, reader.cursor() as rcur,
    ):  # fmt: skip
        wcur.execute("BEGIN TRANSACTION")
        wcur.execute("INSERT INTO dbo.t VALUES (4, N'd')")
        rcur.execute("SET LOCK_TIMEOUT 50")
        with pytest.raises(pytds.Error) as timed_out:
            rcur.execute("SELECT COUNT(*) FROM dbo.t")
        assert timed_out.value.msg_no == 1222
        wcur.execute("ROLLBACK")
        rcur.execute("SELECT @@SPID")
        (reader_spid,) = rcur.fetchone()
        own = all_rows(
            rcur,
            "SELECT session_id, wait_type, waiting_tasks_count, signal_wait_time_ms "
            "FROM sys.dm_exec_session_wait_stats",
        )
        assert own == [[(reader_spid, "LCK_M_S", 1, 0)]]  # only its own session
        (waited_ms,) = all_rows(
            cur,
            "SELECT wait_time_ms, max_wait_time_ms FROM sys.dm_exec_session_wait_stats "
            f"WHERE session_id = {reader_spid}",
        )[0]
        assert waited_ms[0] >= 50
        assert waited_ms[0] == waited_ms[1]
