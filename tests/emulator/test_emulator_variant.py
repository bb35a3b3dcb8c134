"""A value assigned to a ``sql_variant`` column keeps its own type as the base type, as SQL
Server converts implicitly ("sql_variant (Transact-SQL)": 7 is stored as an int, N'x' as an
nvarchar); the emulator stored the bare value and then failed to send it."""

from __future__ import annotations

from decimal import Decimal

import pytest

pytds = pytest.importorskip("pytds")


def test_implicit_conversion_into_a_sql_variant_column_keeps_the_base_type(sql_server):
    conn = pytds.connect(
        sql_server.host,
        port=sql_server.port,
        user=sql_server.user,
        password=sql_server.password,
        autocommit=True,
    )
    cur = conn.cursor()
    cur.execute("CREATE TABLE dbo.v (id int NOT NULL PRIMARY KEY, v sql_variant)")
    cur.execute(
        "INSERT INTO dbo.v VALUES (1, CAST(5 AS sql_variant)), (2, 7), (3, N'x\u00e9'), "
        "(4, NULL), (5, 'abc'), (6, 0x0102)"
    )
    cur.execute("UPDATE dbo.v SET v = 2.5 WHERE id = 4")
    cur.execute("SELECT id, v FROM dbo.v ORDER BY id")
    rows = cur.fetchall()
    assert rows == [
        (1, 5),
        (2, 7),
        (3, "x\u00e9"),
        (4, Decimal("2.5")),
        (5, "abc"),
        (6, b"\x01\x02"),
    ]
    assert isinstance(rows[1][1], int)
    conn.close()
