"""The native client reads the golden all-types query (tests/golden.py) exactly, the same
values every third-party driver test checks (issue 4, proof 2: agreement).

Where the native client's Arrow types deliberately differ from the Python drivers' objects (the
bronze type map, docs/reference/bronze-schema.md), the expected value is converted here, column
family by column family, never per column."""

from __future__ import annotations

import pyarrow as pa
import pytest

import golden
from mssql_cdc import _native

#: sql_variant is rendered as text, as CAST(value AS nvarchar) gives it (bronze-schema.md),
#: except binary, which SQL Server would reinterpret as UTF-16 and we show as 0x hex.
VARIANT_TEXT = {
    "variant_int": "123",
    "variant_bigint": "-5000000000",
    "variant_decimal": "1234.567",
    "variant_datetime2": "2024-01-02 03:04:05.678",
    "variant_varbinary": "0xDEAD",
}


def expected(col: golden.GoldenColumn) -> object:
    if col.value is None:
        return None
    if col.kind == "time":
        return col.value  # time is a string with all its digits
    if col.kind == "guid":
        return str(col.value).upper()
    if col.kind == "variant" and col.name in VARIANT_TEXT:
        return VARIANT_TEXT[col.name]
    return golden.python_value(col)


@pytest.mark.parametrize("encrypt", ["optional", "yes", "strict"])
def test_golden_values_decode_exactly(sql_server, encrypt):
    host = "localhost" if encrypt == "strict" else sql_server.host
    text = (
        f"Server=tcp:{host},{sql_server.port};Database={sql_server.database};"
        f"Encrypt={encrypt};TrustServerCertificate=yes"
    )
    with _native.connect(text, user=sql_server.user, password=sql_server.password) as conn:
        table = pa.table(conn.execute(golden.GOLDEN_SQL))
    assert table.num_rows == 1
    assert table.column_names == [c.name for c in golden.COLUMNS]
    row = table.to_pylist()[0]
    want = {c.name: expected(c) for c in golden.COLUMNS}
    if sql_server.emulator is None:  # a real server's rowversion is its own
        want["rowversion"] = row["rowversion"]
    bad = golden.mismatches(row, want, skip={})
    assert not bad, "\n".join(bad)


def test_golden_arrow_types_follow_the_bronze_type_map(sql_server):
    text = (
        f"Server=tcp:{sql_server.host},{sql_server.port};Database={sql_server.database};"
        "Encrypt=yes;TrustServerCertificate=yes"
    )
    with _native.connect(text, user=sql_server.user, password=sql_server.password) as conn:
        schema = pa.table(conn.execute(golden.GOLDEN_SQL)).schema
    family = {
        "bit": pa.bool_(),
        "date": pa.date32(),
        "time": pa.string(),
        "datetime2": pa.timestamp("us"),
        "datetime": pa.timestamp("us"),
        "datetimeoffset": pa.timestamp("us", tz="UTC"),
        "guid": pa.string(),
        "xml": pa.string(),
        "variant": pa.string(),
        "rowversion": pa.binary(),
        "bytes": pa.binary(),
        "str": pa.string(),
    }
    for col in golden.COLUMNS:
        if col.kind in family:
            assert schema.field(col.name).type == family[col.kind], col.name
        if col.sql_type.startswith(("decimal", "numeric")):
            assert pa.types.is_decimal128(schema.field(col.name).type), col.name
        if col.sql_type == "money":
            assert schema.field(col.name).type == pa.decimal128(19, 4)
        if col.sql_type == "tinyint":
            assert schema.field(col.name).type == pa.int16()
