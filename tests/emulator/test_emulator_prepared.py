"""The prepared-statement RPCs (MS-TDS 2.2.6.6: sp_prepare 11, sp_execute 12, sp_prepexec 13,
sp_unprepare 15) and sp_executesql's output parameters, as their Microsoft reference pages
state them: the handle is an int OUTPUT parameter returned as a RETURNVALUE token, sp_execute
runs the kept statement again, sp_unprepare frees it and an unknown handle is error 8179.
Driven through python-tds's RPC calls (by ProcID), which decode each RETURNVALUE."""

from __future__ import annotations

import pytest

pytds = pytest.importorskip("pytds")
pytest.importorskip("duckdb")

from pytds import tds_base  # noqa: E402

SP_PREPARE = tds_base.InternalProc(11, "sp_prepare")
SP_EXECUTE = tds_base.InternalProc(12, "sp_execute")
SP_PREPEXEC = tds_base.InternalProc(13, "sp_prepexec")
SP_UNPREPARE = tds_base.InternalProc(15, "sp_unprepare")


@pytest.fixture
def cur(emulator):
    with (
        pytds.connect(
            emulator.host, port=emulator.port, user="sa", password=emulator.password,
            autocommit=True,
        ) as conn,
        conn.cursor() as cursor,
    ):  # fmt: skip
        yield cursor


def handle_out():
    return pytds.output(value=None, param_type="int")


def test_prepare_execute_unprepare(cur):
    cur.callproc(
        SP_PREPARE, (handle_out(), "@P1 int, @P2 nvarchar(10)", "SELECT @P1 + 1 AS a, @P2 AS b")
    )
    (handle,) = cur.get_proc_outputs()
    assert isinstance(handle, int)
    cur.callproc(SP_EXECUTE, (handle, 41, "x"))
    assert cur.fetchall() == [(42, "x")]
    cur.callproc(SP_EXECUTE, (handle, 1, "y"))  # the same statement, other values
    assert cur.fetchall() == [(2, "y")]
    cur.callproc(SP_UNPREPARE, (handle,))
    with pytest.raises(pytds.Error) as gone:
        cur.callproc(SP_EXECUTE, (handle, 1, "y"))
    assert gone.value.msg_no == 8179
    assert str(gone.value.args[0]) == f"Could not find prepared statement with handle {handle}."


def test_prepexec_returns_the_rows_then_the_handle(cur):
    cur.callproc(SP_PREPEXEC, (handle_out(), "@P1 int", "SELECT @P1 * 2 AS a", 21))
    assert cur.fetchall() == [(42,)]
    (handle,) = cur.get_proc_outputs()
    cur.callproc(SP_EXECUTE, (handle, 5))
    assert cur.fetchall() == [(10,)]
    cur.callproc(SP_PREPEXEC, (handle_out(), "@P1 int", "SELECT @P1 AS a", 1))
    cur.fetchall()
    assert cur.get_proc_outputs() != [handle]  # a new handle each time


def test_handles_belong_to_their_session(emulator, cur):
    cur.callproc(SP_PREPARE, (handle_out(), None, "SELECT 1 AS a"))
    (handle,) = cur.get_proc_outputs()
    with (
        pytds.connect(
            emulator.host, port=emulator.port, user="sa", password=emulator.password,
            autocommit=True,
        ) as other,
        other.cursor() as other_cur,
        pytest.raises(pytds.Error) as unknown,
    ):  # fmt: skip
        other_cur.callproc(SP_EXECUTE, (handle,))
    assert unknown.value.msg_no == 8179


def test_prepare_with_return_metadata_is_refused(cur):
    with pytest.raises(pytds.Error) as refused:
        cur.callproc(SP_PREPARE, (handle_out(), None, "SELECT 1 AS a", 1))
    assert refused.value.msg_no == 40517


def test_executesql_output_parameter(cur):
    cur.callproc(
        tds_base.SP_EXECUTESQL,
        ("SET @o = @i + 1", "@i int, @o int OUTPUT", 1, pytds.output(value=None, param_type="int")),
    )
    cur.fetchall() if cur.description else None
    session = cur._session  # python-tds keeps each RETURNVALUE by its ordinal in the request
    session.complete_rpc()
    assert {k: p.value for k, p in session.output_params.items()} == {3: 2}
