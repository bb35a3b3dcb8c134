"""Which capture instances changed in an LSN range (``CdcClient.changed_instances``, one
``UNION ALL`` of ``EXISTS`` per change table), against the test server: the statement a stream of
many tables asks once per trigger instead of reading every change table."""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

import pytest

from cdc_source import CdcSource
from mssql_cdc._native import Lsn
from mssql_cdc.options import parse_options
from mssql_cdc.source import client as client_module
from mssql_cdc.source.client import CdcClient
from mssql_cdc.source.sql import changed_instances_query

TABLES = dict.fromkeys(("a", "b", "c"), "id int NOT NULL PRIMARY KEY, v int")
#: and ``dbo.[odd]]name]``, whose instance ``dbo_odd]name`` needs its ``]`` doubled in brackets
ALL = ["dbo_a", "dbo_b", "dbo_c", "dbo_odd]name"]


class Many(CdcSource):
    base_options: ClassVar[dict[str, str]] = {"captureInstance": "dbo_a"}


@pytest.fixture
def many(sql_server) -> Iterator[tuple[Many, CdcClient]]:
    with Many.opened(sql_server, sql_server.emulator, TABLES) as src:
        src.sql("CREATE TABLE dbo.[odd]]name] (id int NOT NULL PRIMARY KEY, v int)")
        src.sql(
            "EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', "
            "@source_name = N'odd]name', @role_name = NULL"
        )
        grant = getattr(sql_server, "grant_reader", None)
        if grant is not None:  # a real server with MSSQL_CDC_TEST_READER
            grant("dbo", "odd]name", "dbo_odd]name")
        client = CdcClient(parse_options(src.options()))
        try:
            yield src, client
        finally:
            client.close()


def _max_lsn(client: CdcClient) -> Lsn:
    commit = client.max_commit()
    assert commit is not None
    return commit.lsn


def _captured(src: Many, client: CdcClient, *statements: str) -> Lsn:
    """Runs ``statements``, has the capture job see them, and returns the newest commit."""
    for sql in statements:
        src.sql(sql)
    src.scan()
    return _max_lsn(client)


def test_only_the_instances_with_a_change_row_in_the_range_are_named(many):
    src, client = many
    start = _captured(src, client)
    first = _captured(
        src, client, "INSERT INTO dbo.a VALUES (1, 1)", "INSERT INTO dbo.[odd]]name] VALUES (1, 1)"
    )
    second = _captured(
        src, client, "UPDATE dbo.a SET v = 2 WHERE id = 1", "INSERT INTO dbo.c VALUES (1, 1)"
    )

    assert client.changed_instances(ALL, start, first) == {"dbo_a", "dbo_odd]name"}
    assert client.changed_instances(ALL, first, second) == {"dbo_a", "dbo_c"}
    assert client.changed_instances(ALL, start, second) == {"dbo_a", "dbo_c", "dbo_odd]name"}
    # the low end is exclusive, the high end inclusive: nothing after the newest commit
    assert client.changed_instances(ALL, second, second) == frozenset()
    # only the instances asked about are answered
    assert client.changed_instances(["dbo_b", "dbo_c"], start, second) == {"dbo_c"}
    assert client.changed_instances([], start, second) == frozenset()


def test_a_range_ending_at_a_commit_includes_that_commit(many):
    src, client = many
    start = _captured(src, client)
    commit = _captured(src, client, "INSERT INTO dbo.b VALUES (1, 1)")
    assert client.changed_instances(ALL, start, commit) == {"dbo_b"}
    assert client.changed_instances(ALL, start, commit.prev()) == frozenset()


def test_many_instances_are_asked_in_statements_of_a_bounded_size(many, monkeypatch):
    src, client = many
    start = _captured(src, client)
    end = _captured(
        src, client, "INSERT INTO dbo.a VALUES (1, 1)", "INSERT INTO dbo.c VALUES (1, 1)"
    )
    sent: list[str] = []
    rows = client.rows

    def counted(sql, params=None, *, needs):
        sent.append(sql)
        return rows(sql, params, needs=needs)

    monkeypatch.setattr(client_module, "CHANGED_PER_STATEMENT", 3)
    monkeypatch.setattr(client, "rows", counted)
    assert client.changed_instances(ALL, start, end) == {"dbo_a", "dbo_c"}
    assert [s.count("EXISTS") for s in sent] == [3, 1]


def test_an_unknown_instance_is_the_servers_invalid_object_error(many):
    from mssql_cdc.errors import SqlServerError

    src, client = many
    end = _captured(src, client)
    with pytest.raises(SqlServerError) as caught:
        client.changed_instances(["dbo_a", "dbo_gone"], Lsn(bytes(10)), end)
    assert caught.value.number == 208


def test_the_statement_names_each_change_table_once_with_two_shared_parameters():
    sql = changed_instances_query(["dbo_a", "x]y"])
    assert sql == (
        "SELECT 0 AS i WHERE EXISTS (SELECT 1 FROM cdc.[dbo_a_CT] "
        "WHERE __$start_lsn > @P1 AND __$start_lsn <= @P2) UNION ALL "
        "SELECT 1 WHERE EXISTS (SELECT 1 FROM cdc.[x]]y_CT] "
        "WHERE __$start_lsn > @P1 AND __$start_lsn <= @P2)"
    )
    with pytest.raises(ValueError, match="no capture instance"):
        changed_instances_query([])
