"""Cleanup and retention, capture instances, net changes, time mapping, DDL history
(Microsoft docs, "About change data capture"); each rule its own test."""

from __future__ import annotations

import datetime as dt

import pytest

pytds = pytest.importorskip("pytds")

ZERO = bytes(10)
START = dt.datetime(2024, 3, 1, 12, 0)


@pytest.fixture
def cur(emulator):
    emulator.set_clock(START)
    conn = pytds.connect(
        emulator.host, port=emulator.port, user="sa", password=emulator.password, autocommit=True
    )
    cursor = conn.cursor()
    cursor.execute("CREATE TABLE dbo.t (id int NOT NULL PRIMARY KEY, a nvarchar(10), b int)")
    cursor.execute("EXEC sys.sp_cdc_enable_db")
    cursor.execute(
        "EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N't', "
        "@role_name = NULL, @supports_net_changes = 1"
    )
    yield cursor
    conn.close()


def one(cur, sql, params=None):
    cur.execute(sql, params)
    return cur.fetchone()[0]


def all_ids(cur, ci="dbo_t"):
    cur.execute(
        f"SELECT id FROM cdc.fn_cdc_get_all_changes_{ci}(sys.fn_cdc_get_min_lsn('{ci}'), "
        "sys.fn_cdc_get_max_lsn(), N'all') ORDER BY __$start_lsn, __$seqval"
    )
    return [r[0] for r in cur.fetchall()]


def test_cleanup_moves_start_lsn_and_min_lsn_and_deletes_rows(emulator, cur):
    cur.execute("INSERT INTO dbo.t VALUES (1, N'a', 1)")
    emulator.advance_clock(dt.timedelta(days=1))
    cur.execute("INSERT INTO dbo.t VALUES (2, N'b', 2)")
    emulator.advance_clock(dt.timedelta(days=3))
    cur.execute("INSERT INTO dbo.t VALUES (3, N'c', 3)")
    emulator.scan()
    before = one(cur, "SELECT sys.fn_cdc_get_min_lsn('dbo_t')")
    assert all_ids(cur) == [1, 2, 3]
    deleted = emulator.cleanup()  # default retention 4320 minutes = 3 days
    assert deleted == 1
    after = one(cur, "SELECT sys.fn_cdc_get_min_lsn('dbo_t')")
    assert after > before
    assert (
        one(cur, "SELECT start_lsn FROM cdc.change_tables WHERE capture_instance = 'dbo_t'")
        == after
    )
    assert all_ids(cur) == [2, 3]
    assert one(cur, "SELECT count(*) FROM cdc.dbo_t_CT") == 2


def test_reading_below_min_after_cleanup_is_313(emulator, cur):
    old_min = one(cur, "SELECT sys.fn_cdc_get_min_lsn('dbo_t')")
    cur.execute("INSERT INTO dbo.t VALUES (1, N'a', 1)")
    emulator.advance_clock(dt.timedelta(hours=2))
    cur.execute("INSERT INTO dbo.t VALUES (2, N'b', 2)")
    emulator.scan()
    emulator.set_retention(60)
    emulator.cleanup()
    with pytest.raises(pytds.tds_base.Error) as info:
        cur.execute(
            "SELECT * FROM cdc.fn_cdc_get_all_changes_dbo_t(%s, sys.fn_cdc_get_max_lsn(), N'all')",
            (pytds.Binary(old_min),),
        )
    assert info.value.msg_no == 313


def test_sp_cdc_cleanup_change_table_uses_the_low_water_mark(emulator, cur):
    cur.execute("INSERT INTO dbo.t VALUES (1, N'a', 1)")
    emulator.advance_clock(dt.timedelta(minutes=1))
    cur.execute("INSERT INTO dbo.t VALUES (2, N'b', 2)")
    emulator.scan()
    cur.execute(
        "SELECT start_lsn FROM cdc.lsn_time_mapping WHERE tran_id <> 0x00 ORDER BY start_lsn"
    )
    lsns = [r[0] for r in cur.fetchall()]
    cur.execute(
        "EXEC sys.sp_cdc_cleanup_change_table @capture_instance = N'dbo_t', "
        "@low_water_mark = %s, @threshold = 1",
        (pytds.Binary(lsns[-1]),),
    )
    assert one(cur, "SELECT sys.fn_cdc_get_min_lsn('dbo_t')") == lsns[-1]
    assert all_ids(cur) == [2]
    with pytest.raises(pytds.tds_base.Error) as info:
        cur.execute(
            "EXEC sys.sp_cdc_cleanup_change_table @capture_instance = N'dbo_t', "
            "@low_water_mark = 0x00000001000000010001"
        )
    assert info.value.msg_no == 22957


def test_change_job_sets_retention_used_by_cleanup(emulator, cur):
    cur.execute("EXEC sys.sp_cdc_change_job @job_type = N'cleanup', @retention = 10")
    assert emulator.db.cdc.retention_minutes == 10
    with pytest.raises(pytds.tds_base.Error) as info:
        cur.execute("EXEC sys.sp_cdc_change_job @job_type = N'cleanup', @retention = 0")
    assert info.value.msg_no == 22994
    cur.execute("EXEC sys.sp_cdc_change_job @job_type = N'capture', @pollinginterval = 2")
    assert emulator.db.capture_job.pending_interval == 2.0


def test_second_instance_has_its_own_start_lsn_and_a_third_is_refused(emulator, cur):
    cur.execute("INSERT INTO dbo.t VALUES (1, N'a', 1)")
    emulator.scan()
    cur.execute(
        "EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N't', "
        "@role_name = NULL, @capture_instance = N'dbo_t_v2'"
    )
    cur.execute("INSERT INTO dbo.t VALUES (2, N'b', 2)")
    emulator.scan()
    first = one(cur, "SELECT sys.fn_cdc_get_min_lsn('dbo_t')")
    second = one(cur, "SELECT sys.fn_cdc_get_min_lsn('dbo_t_v2')")
    assert second > first
    assert all_ids(cur) == [1, 2]
    assert all_ids(cur, "dbo_t_v2") == [2]
    with pytest.raises(pytds.tds_base.Error) as info:
        cur.execute(
            "EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N't', "
            "@role_name = NULL, @capture_instance = N'dbo_t_v3'"
        )
    assert info.value.msg_no == 22962
    cur.execute(
        "EXEC sys.sp_cdc_help_change_data_capture @source_schema = N'dbo', @source_name = N't'"
    )
    rows = cur.fetchall()
    assert [(r[2], r[5], r[13], r[14]) for r in rows] == [
        ("dbo_t", first, "[id]", "[id], [a], [b]"),
        ("dbo_t_v2", second, "[id]", "[id], [a], [b]"),
    ]
    cur.execute(
        "EXEC sys.sp_cdc_disable_table @source_schema = N'dbo', @source_name = N't', "
        "@capture_instance = N'dbo_t'"
    )
    assert one(cur, "SELECT count(*) FROM cdc.change_tables") == 1
    assert one(cur, "SELECT sys.fn_cdc_get_min_lsn('dbo_t')") == ZERO


def test_index_and_captured_columns_tables(cur):
    cur.execute(
        "SELECT column_name, index_ordinal, column_id FROM cdc.index_columns ORDER BY index_ordinal"
    )
    assert cur.fetchall() == [("id", 1, 1)]
    cur.execute(
        "SELECT column_name, column_id, column_type, column_ordinal, is_computed "
        "FROM cdc.captured_columns ORDER BY column_ordinal"
    )
    assert cur.fetchall() == [
        ("id", 1, "int", 1, False),
        ("a", 2, "nvarchar", 2, False),
        ("b", 3, "int", 3, False),
    ]


NET = (
    "SELECT __$operation, __$update_mask, id, a, b FROM cdc.fn_cdc_get_net_changes_dbo_t("
    "sys.fn_cdc_increment_lsn(sys.fn_cdc_get_min_lsn('dbo_t')), sys.fn_cdc_get_max_lsn(), "
    "N'{mode}') ORDER BY id"
)


@pytest.fixture
def net_history(emulator, cur):
    cur.execute("INSERT INTO dbo.t VALUES (1, N'a', 1), (2, N'b', 2)")
    emulator.scan()
    cur.execute(
        "EXEC sys.sp_cdc_cleanup_change_table @capture_instance = N'dbo_t', @low_water_mark = %s",
        (pytds.Binary(one(cur, "SELECT sys.fn_cdc_get_max_lsn()")),),
    )
    cur.execute("UPDATE dbo.t SET b = 10 WHERE id = 1")  # existed before the range: update
    cur.execute("UPDATE dbo.t SET a = N'x' WHERE id = 1")
    cur.execute("DELETE FROM dbo.t WHERE id = 2")  # existed before: delete
    cur.execute("INSERT INTO dbo.t VALUES (3, N'c', 3)")  # new: insert
    cur.execute("UPDATE dbo.t SET b = 30 WHERE id = 3")
    cur.execute("INSERT INTO dbo.t VALUES (4, N'd', 4)")  # inserted and deleted: absent
    cur.execute("DELETE FROM dbo.t WHERE id = 4")
    emulator.scan()
    return cur


def test_net_changes_all(net_history):
    net_history.execute(NET.format(mode="all"))
    assert net_history.fetchall() == [
        (4, None, 1, "x", 10),
        (1, None, 2, "b", 2),
        (2, None, 3, "c", 30),
    ]


def test_net_changes_all_with_mask(net_history):
    net_history.execute(NET.format(mode="all with mask"))
    assert [(r[0], r[1], r[2]) for r in net_history.fetchall()] == [
        (4, b"\x06", 1),
        (1, None, 2),
        (2, None, 3),
    ]


def test_net_changes_all_with_merge(net_history):
    net_history.execute(NET.format(mode="all with merge"))
    assert [(r[0], r[2]) for r in net_history.fetchall()] == [(5, 1), (1, 2), (5, 3)]


def test_net_changes_bad_filter_is_313(net_history):
    with pytest.raises(pytds.tds_base.Error) as info:
        net_history.execute(NET.format(mode="all update old"))
    assert info.value.msg_no == 313


def test_map_time_to_lsn_operators_and_ties(emulator, cur):
    emulator.scan()
    cur.execute("DELETE FROM cdc.lsn_time_mapping")  # only the rows below
    t1 = dt.datetime(2024, 3, 2, 10, 0)
    emulator.set_clock(t1, freeze=True)
    cur.execute("INSERT INTO dbo.t VALUES (1, N'a', 1)")
    cur.execute("INSERT INTO dbo.t VALUES (2, N'b', 2)")  # same commit time: a tie
    emulator.advance_clock(dt.timedelta(minutes=1))
    cur.execute("INSERT INTO dbo.t VALUES (3, N'c', 3)")
    emulator.scan()
    cur.execute(
        "SELECT start_lsn FROM cdc.lsn_time_mapping WHERE tran_id <> 0x00 ORDER BY start_lsn"
    )
    l1, l2, l3 = [r[0] for r in cur.fetchall()]

    def mapped(op, when):
        return one(cur, "SELECT sys.fn_cdc_map_time_to_lsn(%s, %s)", (op, when))

    assert mapped("smallest greater than or equal", t1) == l1
    assert mapped("largest less than or equal", t1) == l2
    assert mapped("smallest greater than", t1) == l3
    assert mapped("largest less than", t1 + dt.timedelta(minutes=1)) == l2
    assert mapped("largest less than", t1) is None
    assert mapped("smallest greater than", t1 + dt.timedelta(hours=1)) is None
    with pytest.raises(pytds.tds_base.Error):
        mapped("closest to", t1)


def test_decrement_lsn(cur):
    assert one(cur, "SELECT sys.fn_cdc_decrement_lsn(0x0000002A000001F40003)") == bytes.fromhex(
        "0000002A000001F40002"
    )


def test_alter_table_writes_ddl_history_and_keeps_captured_columns(emulator, cur):
    cur.execute("INSERT INTO dbo.t VALUES (1, N'a', 1)")
    cur.execute("ALTER TABLE dbo.t ADD c int NULL")
    cur.execute("INSERT INTO dbo.t (id, a, b, c) VALUES (2, N'b', 2, 20)")
    cur.execute("ALTER TABLE dbo.t DROP COLUMN b")
    cur.execute("INSERT INTO dbo.t (id, a, c) VALUES (3, N'c', 30)")
    cur.execute("ALTER TABLE dbo.t ALTER COLUMN a nvarchar(40) NULL")
    emulator.scan()
    cur.execute(
        "SELECT id, a, b FROM cdc.fn_cdc_get_all_changes_dbo_t(sys.fn_cdc_get_min_lsn('dbo_t'), "
        "sys.fn_cdc_get_max_lsn(), N'all') ORDER BY __$start_lsn"
    )
    assert cur.fetchall() == [(1, "a", 1), (2, "b", 2), (3, "c", None)]
    cur.execute("EXEC sys.sp_cdc_get_captured_columns @capture_instance = N'dbo_t'")
    assert [(r[3], r[6], r[7]) for r in cur.fetchall()] == [
        ("id", "int", None),
        ("a", "nvarchar", 40),
        ("b", "int", None),
    ]
    cur.execute("EXEC sys.sp_cdc_get_ddl_history @capture_instance = N'dbo_t'")
    rows = cur.fetchall()
    assert [(r[2], r[3]) for r in rows] == [("dbo_t", False), ("dbo_t", False), ("dbo_t", True)]
    assert "ADD" in rows[0][4].upper()
    assert "DROP COLUMN" in rows[1][4].upper()
    assert rows[0][5] < rows[1][5] < rows[2][5]
    assert one(cur, "SELECT count(*) FROM cdc.ddl_history") == 3


def test_a_second_instance_has_its_own_column_list_start_and_ddl_history(emulator, cur):
    """sys.sp_cdc_enable_table with @captured_column_list; sys.sp_cdc_get_ddl_history returns
    the DDL since that instance was enabled; sys.sp_cdc_disable_table drops one instance."""
    cur.execute("INSERT INTO dbo.t VALUES (1, N'a', 1)")
    cur.execute("ALTER TABLE dbo.t ADD c int NULL")
    cur.execute(
        "EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N't', "
        "@role_name = NULL, @capture_instance = N'dbo_t_v2', @captured_column_list = N'id, a, c'"
    )
    cur.execute("INSERT INTO dbo.t (id, a, b, c) VALUES (2, N'b', 2, 20)")
    cur.execute("ALTER TABLE dbo.t ALTER COLUMN a nvarchar(40) NULL")
    emulator.scan()
    cur.execute("EXEC sys.sp_cdc_get_captured_columns @capture_instance = N'dbo_t_v2'")
    assert [r[3] for r in cur.fetchall()] == ["id", "a", "c"]
    cur.execute("EXEC sys.sp_cdc_get_captured_columns @capture_instance = N'dbo_t'")
    assert [r[3] for r in cur.fetchall()] == ["id", "a", "b"]
    start_v2 = one(cur, "SELECT sys.fn_cdc_get_min_lsn('dbo_t_v2')")
    assert start_v2 > one(cur, "SELECT sys.fn_cdc_get_min_lsn('dbo_t')")
    cur.execute(
        "SELECT id, a, c FROM cdc.fn_cdc_get_all_changes_dbo_t_v2(sys.fn_cdc_get_min_lsn("
        "'dbo_t_v2'), sys.fn_cdc_get_max_lsn(), N'all')"
    )
    assert cur.fetchall() == [(2, "b", 20)]
    assert all_ids(cur) == [1, 2]  # the old instance keeps capturing until disabled
    cur.execute("EXEC sys.sp_cdc_get_ddl_history @capture_instance = N'dbo_t'")
    old = [(r[4].upper(), r[5]) for r in cur.fetchall()]
    cur.execute("EXEC sys.sp_cdc_get_ddl_history @capture_instance = N'dbo_t_v2'")
    new = [(r[4].upper(), r[5]) for r in cur.fetchall()]
    assert len(old) == 2
    assert "ADD" in old[0][0]
    assert old[0][1] < start_v2 < old[1][1]
    assert new == [old[1]]  # the same statement, at the same LSN, in both instances
    cur.execute(
        "EXEC sys.sp_cdc_disable_table @source_schema = N'dbo', @source_name = N't', "
        "@capture_instance = N'dbo_t'"
    )
    cur.execute("EXEC sys.sp_cdc_help_change_data_capture")
    assert [r[2] for r in cur.fetchall()] == ["dbo_t_v2"]
    cur.execute("EXEC sys.sp_cdc_get_ddl_history @capture_instance = N'dbo_t_v2'")
    assert len(cur.fetchall()) == 1
