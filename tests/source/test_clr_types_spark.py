"""The stream and the snapshot on a table holding every type the bronze type map converts
(docs/reference/bronze-schema.md#type-map): ``hierarchyid`` as its ``/1/2/`` text,
``geography`` and ``geometry`` as WKB, ``sql_variant`` as its value's text, and ``xml`` and
``varbinary(max)`` values larger than a TDS packet (so sent in several PLP chunks and packets),
all read end to end through local Spark against the emulator."""

from __future__ import annotations

import struct

import pytest

import mssql_cdc

pytestmark = pytest.mark.usefixtures("emulator")

XML = "<doc>" + "".join(f"<i n='{i}'>v{i}</i>" for i in range(4000)) + "</doc>"  # ~70 KB
BLOB = bytes(range(256)) * 400  # 100 KiB
COLUMNS = ("id", "h", "g", "m", "v", "x", "b")


def wkb_point(x: float, y: float) -> bytes:
    return struct.pack("<BIdd", 1, 1, x, y)


def wkb_line(*points: tuple[float, float]) -> bytes:
    return struct.pack("<BII", 1, 2, len(points)) + b"".join(struct.pack("<dd", *p) for p in points)


EXPECTED = {
    1: ("/1/2/", wkb_point(-122.35, 47.65), wkb_line((0, 0), (1, 1), (2, 0)), "42", XML, BLOB),
    2: ("/", wkb_point(2.5, 1.5), wkb_point(3, 4), "x\u00e9", "<a/>", b"\x01"),
    3: (None, None, None, None, None, None),
}


@pytest.fixture
def typed(source):
    source.sql(
        "CREATE TABLE dbo.typed (id int NOT NULL PRIMARY KEY, h hierarchyid, g geography, "
        "m geometry, v sql_variant, x xml, b varbinary(max))"
    )
    source.sql(
        "EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N'typed', "
        "@role_name = NULL"
    )
    source.sql(
        "INSERT INTO dbo.typed VALUES (1, '/1/2/', geography::Point(47.65, -122.35, 4326), "
        "geometry::STGeomFromText('LINESTRING(0 0, 1 1, 2 0)', 0), 42, @P1, @P2)",
        [XML, BLOB],
    )
    source.sql(
        "INSERT INTO dbo.typed VALUES (2, hierarchyid::GetRoot(), 'POINT(2.5 1.5)', "
        "'POINT(3 4)', N'x\u00e9', '<a/>', 0x01), (3, NULL, NULL, NULL, NULL, NULL, NULL)"
    )
    source.scan()
    return source


def rows_by_id(rows) -> dict[int, tuple[object, ...]]:
    out = {}
    for r in rows:
        values = tuple(r[c] for c in COLUMNS[1:])
        out[r["id"]] = tuple(bytes(v) if isinstance(v, bytearray) else v for v in values)
    return out


def test_the_snapshot_converts_every_type(spark, typed):
    mssql_cdc.register(spark)
    df = (
        spark.read.format("mssql_cdc_snapshot")
        .options(**typed.options(captureInstance="dbo_typed"))
        .load()
    )
    types = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    assert [types[c] for c in COLUMNS] == [
        "int",
        "string",
        "binary",
        "binary",
        "string",
        "string",
        "binary",
    ]
    assert rows_by_id(df.collect()) == EXPECTED


def test_the_stream_converts_every_type(spark, typed, tmp_path):
    mssql_cdc.register(spark)
    df = (
        spark.readStream.format("mssql_cdc")
        .options(**typed.options(captureInstance="dbo_typed"))
        .load()
    )
    query = (
        df.writeStream.format("parquet")
        .option("path", str(tmp_path / "out"))
        .option("checkpointLocation", str(tmp_path / "cp"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    rows = spark.read.parquet(str(tmp_path / "out")).collect()
    assert {r["_operation"] for r in rows} == {2}
    assert rows_by_id(rows) == EXPECTED
