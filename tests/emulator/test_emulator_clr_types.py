"""``hierarchyid``, ``geography`` and ``geometry`` columns as SQL Server stores and sends them:
CLR UDT columns (MS-TDS 2.2.5.5.6) whose values are the types' serializations ([MS-SSCLRT]
2.1 and 2.2: ``/1/2/`` is ``0x5B40``, a geography point is its SRID, version 1, properties
0x0C, latitude, longitude), the ``/1/2/`` text of ``CAST(h AS nvarchar(4000))`` and
``h.ToString()``, and the WKB of ``g.STAsBinary()`` ("hierarchyid data type method reference",
"STAsBinary (geography Data Type)" in the Transact-SQL docs); also through CDC's change
function, as the reader selects them."""

from __future__ import annotations

import struct

import pyarrow as pa
import pytest

from mssql_cdc import _native
from mssql_cdc.errors import SqlServerError


@pytest.fixture
def conn(sql_server, emulator):
    with _native.connect(
        f"Server=tcp:{sql_server.host},{sql_server.port};Encrypt=no",
        user=sql_server.user,
        password=sql_server.password,
    ) as c:
        c.execute(
            "CREATE TABLE dbo.shapes (id int NOT NULL PRIMARY KEY, h hierarchyid, "
            "g geography, m geometry)"
        )
        yield c


def wkb_point(x: float, y: float) -> bytes:
    return struct.pack("<BIdd", 1, 1, x, y)


def wkb_line(*points: tuple[float, float]) -> bytes:
    return struct.pack("<BII", 1, 2, len(points)) + b"".join(struct.pack("<dd", *p) for p in points)


def test_values_on_the_wire_are_the_clr_serializations(conn):
    conn.execute(
        "INSERT INTO dbo.shapes VALUES (1, '/1/2/', geography::Point(47.65, -122.35, 4326), "
        "geometry::STGeomFromText('LINESTRING(0 0, 1 1)', 0)), "
        "(2, hierarchyid::GetRoot(), 'POINT(-122.35 47.65)', 'POINT(3 4)'), "
        "(3, hierarchyid::Parse('/1/1/'), NULL, NULL)"
    )
    table = pa.table(conn.execute("SELECT id, h, g, m FROM dbo.shapes ORDER BY id"))
    assert [f.type for f in table.schema][1:] == [pa.binary()] * 3
    rows = table.to_pylist()
    assert [r["h"] for r in rows] == [bytes.fromhex("5B40"), b"", bytes.fromhex("5AC0")]
    point = bytes.fromhex("E6100000010C") + struct.pack("<dd", 47.65, -122.35)
    assert rows[0]["g"] == point
    assert rows[1]["g"] == point  # WKT is longitude first; the serialization latitude first
    segment = struct.pack("<iBB", 0, 1, 0x14) + struct.pack("<dddd", 0, 0, 1, 1)
    assert rows[0]["m"] == segment  # a single line segment: properties 0x14, two points
    assert rows[1]["m"] == struct.pack("<iBBdd", 0, 1, 0x0C, 3, 4)
    assert rows[2]["g"] is None


def test_text_and_wkb_forms_as_the_reader_selects_them(conn):
    conn.execute(
        "INSERT INTO dbo.shapes VALUES (1, '/3/80/', geography::Point(1.5, 2.5, 4326), "
        "'LINESTRING(0 0, 1 1, 2 0)')"
    )
    conn.execute("UPDATE dbo.shapes SET h = '/5199/' WHERE id = 1")
    direct = pa.table(
        conn.execute(
            "SELECT CAST(h AS nvarchar(4000)) AS h, h.ToString() AS t, g.STAsBinary() AS g, "
            "s.[m].STAsBinary() AS m FROM dbo.shapes AS s"
        )
    ).to_pylist()
    line = wkb_line((0, 0), (1, 1), (2, 0))
    assert direct == [{"h": "/5199/", "t": "/5199/", "g": wkb_point(2.5, 1.5), "m": line}]


def test_cdc_change_rows_keep_the_clr_values(conn, emulator):
    conn.execute("EXEC sys.sp_cdc_enable_db")
    conn.execute(
        "EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N'shapes', "
        "@role_name = NULL"
    )
    conn.execute("INSERT INTO dbo.shapes VALUES (1, '/1/', 'POINT(1 2)', 'POINT(3 4)')")
    conn.execute("UPDATE dbo.shapes SET h = '/2/' WHERE id = 1")
    emulator.scan()
    rows = pa.table(
        conn.execute(
            "SELECT c.__$operation AS op, CAST(c.[h] AS nvarchar(4000)) AS [h], "
            "c.[g].STAsBinary() AS [g], c.[m].STAsBinary() AS [m] "
            "FROM cdc.fn_cdc_get_all_changes_dbo_shapes(sys.fn_cdc_get_min_lsn(N'dbo_shapes'), "
            "sys.fn_cdc_get_max_lsn(), N'all update old') AS c "
            "ORDER BY c.__$start_lsn, c.__$seqval, c.__$operation"
        )
    ).to_pylist()
    assert [(r["op"], r["h"]) for r in rows] == [(2, "/1/"), (3, "/1/"), (4, "/2/")]
    assert {r["g"] for r in rows} == {wkb_point(1, 2)}
    assert {r["m"] for r in rows} == {wkb_point(3, 4)}


@pytest.mark.parametrize(
    ("sql", "number"),
    [
        ("INSERT INTO dbo.shapes (id, h) VALUES (9, '1/2')", 6522),
        ("INSERT INTO dbo.shapes (id, g) VALUES (9, 'CIRCLE(1 2)')", 6522),
        ("SELECT hierarchyid::Parse('/x/')", 6522),
    ],
)
def test_bad_text_is_error_6522(conn, sql, number):
    with pytest.raises(SqlServerError) as info:
        conn.execute(sql)
    assert info.value.number == number
