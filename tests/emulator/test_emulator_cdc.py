"""CDC semantics of the emulator, each documented rule its own test
(Microsoft docs, "About change data capture" and the cdc function pages). The tests that need
only a capture scan run against a real SQL Server too (MSSQL_CDC_TEST_SERVER): there they check
that the emulator's rules are SQL Server's."""

from __future__ import annotations

import datetime as dt
import re

import pytest

pytds = pytest.importorskip("pytds")

ZERO = bytes(10)
CHANGES = (
    "SELECT __$start_lsn, __$seqval, __$operation, __$update_mask, id, name, qty "
    "FROM cdc.fn_cdc_get_all_changes_dbo_orders(sys.fn_cdc_get_min_lsn('dbo_orders'), "
    "sys.fn_cdc_get_max_lsn(), N'{mode}') "
    "ORDER BY __$start_lsn, __$seqval, __$operation"
)
#: the change table itself: the only place __$command_id is ("cdc.<capture_instance>_CT")
COMMAND_IDS = (
    "SELECT __$command_id FROM cdc.dbo_orders_CT "
    "ORDER BY __$start_lsn, __$command_id, __$seqval, __$operation"
)


@pytest.fixture
def cur(sql_server):
    conn = pytds.connect(
        sql_server.host,
        port=sql_server.port,
        user=sql_server.user,
        password=sql_server.password,
        database=sql_server.database,
        autocommit=True,
    )
    cursor = conn.cursor()
    cursor.execute(
        "CREATE TABLE dbo.orders (id int NOT NULL PRIMARY KEY, name nvarchar(20), qty int)"
    )
    cursor.execute("EXEC sys.sp_cdc_enable_db")
    cursor.execute(
        "EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N'orders', "
        "@role_name = NULL, @supports_net_changes = 1"
    )
    yield cursor
    conn.close()


def changes(cur, mode="all"):
    cur.execute(CHANGES.format(mode=mode))
    return cur.fetchall()


def test_one_transaction_shares_one_commit_lsn_with_rising_seqval_and_command_id(sql_server, cur):
    cur.execute(
        "BEGIN TRAN; INSERT INTO dbo.orders VALUES (1, N'a', 1); "
        "INSERT INTO dbo.orders VALUES (2, N'b', 2), (3, N'c', 3); COMMIT TRAN"
    )
    cur.execute("INSERT INTO dbo.orders VALUES (4, N'd', 4)")
    sql_server.scan()
    rows = changes(cur)
    assert [r[4] for r in rows] == [1, 2, 3, 4]
    first_tx = rows[:3]
    assert len({r[0] for r in first_tx}) == 1
    assert rows[3][0] > rows[0][0]
    assert [r[1] for r in first_tx] == sorted(r[1] for r in first_tx)
    assert len({r[1] for r in first_tx}) == 3
    cur.execute(COMMAND_IDS)
    assert [r[0] for r in cur.fetchall()] == [1, 2, 3, 1]
    assert {r[2] for r in rows} == {2}
    assert all(len(r[0]) == 10 for r in rows)


def test_update_mask_marks_only_assigned_columns_and_all_for_insert_delete(sql_server, cur):
    cur.execute("INSERT INTO dbo.orders VALUES (1, N'a', 1)")
    cur.execute("UPDATE dbo.orders SET qty = 5 WHERE id = 1")
    cur.execute("DELETE FROM dbo.orders WHERE id = 1")
    sql_server.scan()
    rows = changes(cur, "all update old")
    assert [(r[2], r[3]) for r in rows] == [
        (2, b"\x07"),
        (3, b"\x04"),
        (4, b"\x04"),
        (1, b"\x07"),
    ]
    assert rows[1][6] == 1
    assert rows[2][6] == 5
    assert rows[1][1] == rows[2][1]  # op 3 and 4 share the seqval


def test_all_omits_before_images_and_all_update_old_keeps_them(sql_server, cur):
    cur.execute("INSERT INTO dbo.orders VALUES (1, N'a', 1)")
    cur.execute("UPDATE dbo.orders SET name = N'z' WHERE id = 1")
    sql_server.scan()
    assert [r[2] for r in changes(cur, "all")] == [2, 4]
    assert [r[2] for r in changes(cur, "all update old")] == [2, 3, 4]


def test_max_lsn_moves_only_after_a_capture_scan(sql_server, cur):
    sql_server.scan()
    cur.execute("SELECT sys.fn_cdc_get_max_lsn()")
    before = cur.fetchone()[0]
    cur.execute("INSERT INTO dbo.orders VALUES (1, N'a', 1)")
    cur.execute("SELECT sys.fn_cdc_get_max_lsn()")
    assert cur.fetchone()[0] == before
    cur.execute("EXEC sys.sp_cdc_scan")
    cur.execute("SELECT sys.fn_cdc_get_max_lsn()")
    after = cur.fetchone()[0]
    assert after > before
    cur.execute(
        "SELECT tran_id FROM cdc.lsn_time_mapping WHERE start_lsn = %s", (pytds.Binary(after),)
    )
    assert cur.fetchone()[0] != b"\x00"


def test_scan_without_captured_changes_writes_a_tran_id_zero_row(sql_server, cur):
    cur.execute("CREATE TABLE dbo.other (x int)")
    cur.execute("INSERT INTO dbo.other VALUES (1)")
    sql_server.scan()
    cur.execute("SELECT tran_id FROM cdc.lsn_time_mapping ORDER BY start_lsn")
    assert cur.fetchall()[-1] == (b"\x00",)


@pytest.mark.parametrize(
    ("from_sql", "to_sql"),
    [
        ("NULL", "sys.fn_cdc_get_max_lsn()"),
        ("sys.fn_cdc_get_min_lsn('dbo_orders')", "NULL"),
        ("0x00000000000000000001", "sys.fn_cdc_get_max_lsn()"),
        ("sys.fn_cdc_get_min_lsn('dbo_orders')", "0xFFFFFFFFFFFFFFFFFFFF"),
        ("sys.fn_cdc_get_max_lsn()", "sys.fn_cdc_get_min_lsn('dbo_orders')"),
    ],
)
def test_out_of_range_or_null_lsn_is_error_313(sql_server, cur, from_sql, to_sql):
    cur.execute("INSERT INTO dbo.orders VALUES (1, N'a', 1)")
    sql_server.scan()
    with pytest.raises(pytds.tds_base.Error) as info:
        cur.execute(
            f"SELECT * FROM cdc.fn_cdc_get_all_changes_dbo_orders({from_sql}, {to_sql}, N'all')"
        )
    assert "An insufficient number of arguments were supplied" in str(info.value)
    assert getattr(info.value, "msg_no", 313) == 313


def test_unknown_capture_instance_has_the_zero_min_lsn(cur):
    cur.execute("SELECT sys.fn_cdc_get_min_lsn('no_such_instance'), sys.fn_cdc_get_min_lsn('')")
    assert cur.fetchone() == (ZERO, ZERO)


def test_lsn_text_conversions_and_increment(cur):
    cur.execute(
        "SELECT CONVERT(varchar(22), sys.fn_cdc_increment_lsn("
        "CONVERT(binary(10), '0x0000002A000001F40003', 1)), 1)"
    )
    assert cur.fetchone() == ("0x0000002A000001F40004",)


def test_rolled_back_transaction_is_not_captured(sql_server, cur):
    cur.execute("BEGIN TRAN; INSERT INTO dbo.orders VALUES (9, N'x', 9); ROLLBACK")
    cur.execute("INSERT INTO dbo.orders VALUES (1, N'a', 1)")
    sql_server.scan()
    assert [r[4] for r in changes(cur)] == [1]


def test_captured_columns_are_reported(cur):
    cur.execute("EXEC sys.sp_cdc_get_captured_columns @capture_instance = N'dbo_orders'")
    rows = cur.fetchall()
    assert [(r[3], r[5], r[6]) for r in rows] == [
        ("id", 1, "int"),
        ("name", 2, "nvarchar"),
        ("qty", 3, "int"),
    ]


def test_commit_times_are_server_local_time(emulator, cur):
    emulator.set_clock(dt.datetime(2024, 7, 1, 12, 0, tzinfo=dt.timezone.utc))
    cur.execute("INSERT INTO dbo.orders VALUES (1, N'a', 1)")
    emulator.scan()
    cur.execute("SELECT sys.fn_cdc_map_lsn_to_time(sys.fn_cdc_get_max_lsn())")
    when = cur.fetchone()[0]
    assert when.replace(microsecond=0) == dt.datetime(2024, 7, 1, 12, 0)


def test_the_change_function_returns_the_documented_columns_and_no_command_id(sql_server, cur):
    """ "Table Returned" of cdc.fn_cdc_get_all_changes_<capture_instance>: four metadata columns,
    then the captured ones; __$command_id and __$end_lsn are only in the change table, so
    selecting one from the function is error 207, as on SQL Server."""
    cur.execute("INSERT INTO dbo.orders VALUES (1, N'a', 1)")
    sql_server.scan()
    function = (
        "cdc.fn_cdc_get_all_changes_dbo_orders(sys.fn_cdc_get_min_lsn('dbo_orders'), "
        "sys.fn_cdc_get_max_lsn(), N'all')"
    )
    cur.execute(f"SELECT * FROM {function}")
    names = [d[0] for d in cur.description]
    metadata = ["__$start_lsn", "__$seqval", "__$operation", "__$update_mask"]
    assert names == [*metadata, "id", "name", "qty"]
    for column in ("__$command_id", "__$end_lsn"):
        with pytest.raises(
            pytds.ProgrammingError, match=re.escape(f"Invalid column name '{column}'")
        ):
            cur.execute(f"SELECT {column} FROM {function}")
