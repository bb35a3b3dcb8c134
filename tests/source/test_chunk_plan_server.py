"""The chunk planner against the test server (no Spark): chunks of ``chunk_rows`` keys in the
server's order of an integer, a composite and a ``uniqueidentifier`` key, every key in exactly
one chunk; a table without a key is refused."""

from __future__ import annotations

import uuid

import pytest

from mssql_cdc import _native
from mssql_cdc.options import parse_options
from mssql_cdc.source.chunk_plan import plan_chunks

# SQL Server's uniqueidentifier order (learn.microsoft.com/sql/connect/ado-net/sql/
# compare-guid-uniqueidentifier-values): the stored bytes 10-15, 8-9, 6-7, 4-5, 0-3
_ORDER = (10, 11, 12, 13, 14, 15, 8, 9, 6, 7, 4, 5, 0, 1, 2, 3)


def _guid_key(text: str) -> bytes:
    stored = uuid.UUID(text).bytes_le
    return bytes(stored[i] for i in _ORDER)


@pytest.fixture
def server(sql_server):
    conn = _native.connect(
        f"Server=tcp:{sql_server.host},{sql_server.port};Encrypt=no",
        user=sql_server.user,
        password=sql_server.password,
    )
    conn.execute("EXEC sys.sp_cdc_enable_db")
    yield conn, sql_server
    conn.close()


def _enable(conn, table):
    conn.execute(
        f"EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N'{table}', "
        "@role_name = NULL"
    )


def _options(sql_server, instance):
    return parse_options(
        {
            "connectionString": f"Server=tcp:{sql_server.host},{sql_server.port};Encrypt=no",
            "user": sql_server.user,
            "password": sql_server.password,
            "captureInstance": instance,
        }
    )


def _inside(key, lo, hi):
    return (lo is None or key >= lo) and (hi is None or key < hi)


@pytest.mark.parametrize("kind", ["int", "composite", "guid"])
def test_chunks_follow_the_server_order_and_hold_every_key_once(server, kind):
    conn, sql_server = server
    if kind == "int":
        conn.execute("CREATE TABLE dbo.t (id int NOT NULL PRIMARY KEY)")
        keys = [(i * 37) % 101 for i in range(20)]
        conn.execute("INSERT INTO dbo.t VALUES " + ", ".join(f"({k})" for k in keys))
        order = sorted((k,) for k in keys)
    elif kind == "composite":
        conn.execute(
            "CREATE TABLE dbo.t (a int NOT NULL, b nvarchar(5) NOT NULL, PRIMARY KEY (a, b))"
        )
        keys = [(i % 3, f"k{(i * 7) % 20:02d}") for i in range(20)]
        conn.execute("INSERT INTO dbo.t VALUES " + ", ".join(f"({a}, N'{b}')" for a, b in keys))
        order = sorted(keys)
    else:
        conn.execute("CREATE TABLE dbo.t (id uniqueidentifier NOT NULL PRIMARY KEY)")
        keys = [str(uuid.UUID(int=(i * 0x9E3779B97F4A7C15) % (1 << 128))) for i in range(20)]
        conn.execute("INSERT INTO dbo.t VALUES " + ", ".join(f"('{k}')" for k in keys))
        order = [(k,) for k in sorted(keys, key=_guid_key)]
    _enable(conn, "t")
    plan = plan_chunks(_options(sql_server, "dbo_t"), 6)
    assert plan.rows == 20
    assert len(plan.chunks) == 4  # 6 + 6 + 6 + 2
    # each bound is the key 6, 12, 18 rows into the server's order
    bounds = [tuple(hi) for _, hi in plan.chunks[:-1]]
    if kind == "guid":
        bounds = [(str(b[0]).lower(),) for b in bounds]
    assert bounds == [order[6], order[12], order[18]]
    ranks = {k: i for i, k in enumerate(order)}
    for key in order:
        rank = ranks[key]
        holding = [
            n
            for n, (lo, hi) in enumerate(plan.chunks)
            if _inside(
                rank,
                None if lo is None else ranks[_norm(lo, kind)],
                None if hi is None else ranks[_norm(hi, kind)],
            )
        ]
        assert holding == [rank // 6]


def _norm(bound, kind):
    return (str(bound[0]).lower(),) if kind == "guid" else tuple(bound)


def test_a_table_without_a_key_is_refused(server):
    conn, sql_server = server
    conn.execute("CREATE TABLE dbo.heap (v int)")
    _enable(conn, "heap")
    with pytest.raises(ValueError, match="a chunked snapshot needs a key"):
        plan_chunks(_options(sql_server, "dbo_heap"), 10)
