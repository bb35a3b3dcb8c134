"""The emulator's C row encoder (native/src/tds/encode_row.c, emulator/protocol/arrowrows.py).

Two properties, over generated values of every type (NULLs, extremes, PLP values longer than a
packet and than a PLP chunk):

* the C encoder writes exactly the bytes of the Python encoder it replaced (whose output the
  five drivers agree on, tests/golden.py), for every type and for the golden query itself;
* decode(encode(x)) == x: the native client reads back every inserted value.
"""

from __future__ import annotations

import datetime as dt
import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal

import pyarrow as pa
import pytest

import golden
from mssql_cdc import _native
from mssql_cdc.emulator.engine.executor import Executor
from mssql_cdc.emulator.protocol import arrowrows
from mssql_cdc.emulator.server import render

ROWS = 40


@dataclass(frozen=True)
class Case:
    name: str
    sql_type: str
    #: (T-SQL literal, the value the native client decodes) for row i of a seeded generator
    make: Callable[[random.Random, int], tuple[str, object]]
    #: whether the C encoder takes the values itself (else it copies Python-encoded bytes)
    native: bool = True


Gen = Callable[[random.Random], tuple[str, object]]


def _pick(
    extremes: list[tuple[str, object]], gen: Gen
) -> Callable[[random.Random, int], tuple[str, object]]:
    """Row 0 is NULL, the next rows the extremes, the rest generated."""

    def make(r: random.Random, i: int) -> tuple[str, object]:
        if i == 0:
            return "NULL", None
        if i <= len(extremes):
            return extremes[i - 1]
        return gen(r)

    return make


def _const(literal: str, value: object) -> Gen:
    return lambda r: (literal, value)


def _int(lo: int, hi: int) -> Gen:
    def gen(r: random.Random) -> tuple[str, object]:
        v = r.randint(lo, hi)
        return str(v), v

    return gen


def _dec(p: int, s: int) -> Gen:
    def gen(r: random.Random) -> tuple[str, object]:
        digits = "".join(r.choice("0123456789") for _ in range(p))
        sign = r.choice(["", "-"])
        text = f"{sign}{digits[: p - s] or '0'}.{digits[p - s :]}" if s else f"{sign}{digits}"
        value = Decimal(text)
        return f"CAST('{text}' AS decimal({p},{s}))", value

    return gen


def _text(alphabet: str, n: int, *, wide: bool, pad: int = 0) -> Gen:
    def gen(r: random.Random) -> tuple[str, object]:
        size = n if n > 1000 else r.randint(0, n)
        text = "".join(r.choice(alphabet) for _ in range(size))
        literal = ("N'" if wide else "'") + text.replace("'", "''") + "'"
        return literal, text.ljust(pad) if pad else text

    return gen


def _bin(n: int, pad: int = 0) -> Gen:
    def gen(r: random.Random) -> tuple[str, object]:
        size = n if n > 1000 else r.randint(1, n)
        data = r.randbytes(size)
        return "0x" + data.hex(), data.ljust(pad, b"\x00") if pad else data

    return gen


def _when(scale: int) -> Gen:
    """A datetime2 value with ``scale`` digits (at most 6: the client reads microseconds)."""

    def gen(r: random.Random) -> tuple[str, object]:
        base = dt.datetime(1, 1, 1) + dt.timedelta(seconds=r.randint(0, 315_537_897_599))
        micros = r.randint(0, 999_999) // 10 ** (6 - scale) * 10 ** (6 - scale)
        value = base.replace(microsecond=micros)
        text = (
            f"{value.year:04d}-"
            + value.strftime("%m-%d %H:%M:%S")
            + (f".{micros:06d}"[: scale + 1] if scale else "")
        )
        return f"'{text}'", value

    return gen


def _day(r: random.Random) -> tuple[str, object]:
    day = dt.date(1, 1, 1) + dt.timedelta(days=r.randint(0, 3_652_058))
    return f"'{day.isoformat()}'", day


def _guid(r: random.Random) -> tuple[str, object]:
    g = uuid.UUID(bytes=r.randbytes(16))
    return f"'{g}'", str(g).upper()


def _float(r: random.Random) -> tuple[str, object]:
    v = r.uniform(-1e300, 1e300)
    return repr(v), v


_ASCII = "abcXYZ 019'~"
_UNICODE = "aé€中😀 '"
_LONG = 20_000  # longer than a packet (4096) and than a PLP chunk (8000 bytes)

CASES = [
    Case("tinyint", "tinyint", _pick([("0", 0), ("255", 255)], _int(0, 255))),
    Case(
        "smallint", "smallint", _pick([("-32768", -32768), ("32767", 32767)], _int(-32768, 32767))
    ),
    Case(
        "int",
        "int",
        _pick([("-2147483648", -(2**31)), ("2147483647", 2**31 - 1)], _int(-(2**31), 2**31 - 1)),
    ),
    Case(
        "bigint",
        "bigint",
        _pick(
            [("-9223372036854775808", -(2**63)), ("9223372036854775807", 2**63 - 1)],
            _int(-(2**63), 2**63 - 1),
        ),
    ),
    Case("bit", "bit", _pick([("0", False), ("1", True)], _const("1", True))),
    Case(
        "float",
        "float",
        _pick([("1.7976931348623157e308", 1.7976931348623157e308), ("0", 0.0)], _float),
    ),
    Case("real", "real", _pick([("1.5", 1.5), ("-0.25", -0.25)], _const("2.5", 2.5))),
    Case("dec9_2", "decimal(9,2)", _pick([], _dec(9, 2))),
    Case("dec19_4", "decimal(19,4)", _pick([], _dec(19, 4))),
    Case("dec28_10", "decimal(28,10)", _pick([], _dec(28, 10))),
    Case(
        "dec38_0",
        "decimal(38,0)",
        _pick([(f"CAST('-{'9' * 38}' AS decimal(38,0))", Decimal("-" + "9" * 38))], _dec(38, 0)),
    ),
    Case("dec38_38", "numeric(38,38)", _pick([], _dec(38, 38))),
    Case(
        "money",
        "money",
        _pick(
            [
                ("-922337203685477.5808", Decimal("-922337203685477.5808")),
                ("922337203685477.5807", Decimal("922337203685477.5807")),
            ],
            _const("12.3456", Decimal("12.3456")),
        ),
    ),
    Case(
        "smallmoney",
        "smallmoney",
        _pick(
            [("-214748.3648", Decimal("-214748.3648")), ("214748.3647", Decimal("214748.3647"))],
            _const("-1.5", Decimal("-1.5000")),
        ),
    ),
    Case("guid", "uniqueidentifier", _pick([], _guid)),
    Case(
        "date",
        "date",
        _pick([("'0001-01-01'", dt.date(1, 1, 1)), ("'9999-12-31'", dt.date(9999, 12, 31))], _day),
    ),
    Case("datetime2_0", "datetime2(0)", _pick([], _when(0))),
    Case("datetime2_3", "datetime2(3)", _pick([], _when(3))),
    Case(
        "datetime2_6",
        "datetime2(6)",
        _pick(
            [("'9999-12-31 23:59:59.999999'", dt.datetime(9999, 12, 31, 23, 59, 59, 999999))],
            _when(6),
        ),
    ),
    Case(
        "datetime2_7",
        "datetime2(7)",
        _pick([("'0001-01-01 00:00:00.0000000'", dt.datetime(1, 1, 1))], _when(6)),
    ),
    Case(
        "datetimeoffset",
        "datetimeoffset(3)",
        _pick(
            [
                (
                    "'2024-01-01 00:30:00.123 +01:00'",
                    dt.datetime(2023, 12, 31, 23, 30, 0, 123000, tzinfo=dt.timezone.utc),
                )
            ],
            _const(
                "'2024-06-30 12:00:00.000 -05:30'",
                dt.datetime(2024, 6, 30, 17, 30, tzinfo=dt.timezone.utc),
            ),
        ),
    ),
    Case(
        "time",
        "time(7)",
        _pick(
            [("'23:59:59.9999999'", "23:59:59.9999999")], _const("'00:00:01.5'", "00:00:01.5000000")
        ),
    ),
    Case(
        "datetime",
        "datetime",
        _pick(
            [("'1753-01-01 00:00:00'", dt.datetime(1753, 1, 1))],
            _const("'2024-01-01 10:00:00'", dt.datetime(2024, 1, 1, 10)),
        ),
    ),
    Case(
        "smalldatetime",
        "smalldatetime",
        _pick(
            [("'2079-06-06 23:59:00'", dt.datetime(2079, 6, 6, 23, 59))],
            _const("'2024-01-01 10:00:29'", dt.datetime(2024, 1, 1, 10)),
        ),
    ),
    Case("char", "char(10)", _pick([], _text(_ASCII, 10, wide=False, pad=10))),
    Case("varchar", "varchar(50)", _pick([("''", "")], _text(_ASCII, 50, wide=False))),
    Case("varchar_max", "varchar(max)", _pick([], _text(_ASCII, _LONG, wide=False))),
    # non-ASCII text in a code page (cp1252): Python's codec, then copied by the C encoder
    Case("varchar_1252", "varchar(20)", _pick([], _text("café œ ß", 20, wide=False))),
    Case("nchar", "nchar(10)", _pick([], _text(_UNICODE.replace("😀", ""), 10, wide=True, pad=10))),
    Case("nvarchar", "nvarchar(50)", _pick([("N''", "")], _text(_UNICODE, 20, wide=True))),
    Case("nvarchar_max", "nvarchar(max)", _pick([], _text(_UNICODE, _LONG, wide=True))),
    Case("binary", "binary(8)", _pick([], _bin(8, pad=8))),
    Case("varbinary", "varbinary(50)", _pick([("0x", b"")], _bin(50))),
    Case("varbinary_max", "varbinary(max)", _pick([], _bin(_LONG))),
    # encoded by the Python encoder, copied by the C encoder
    Case("xml", "xml", _pick([], _const("N'<a>x</a>'", "<a>x</a>")), native=False),
    Case("ntext", "ntext", _pick([], _text(_UNICODE, 30, wide=True)), native=False),
    Case("image", "image", _pick([], _bin(30)), native=False),
]


def _fill(executor: Executor, case: Case) -> list[object]:
    """Creates dbo.enc_<case> (id, v) and inserts ROWS generated values; returns them."""
    table = f"dbo.enc_{case.name}"
    outcome = executor.run_batch(f"CREATE TABLE {table} (id int PRIMARY KEY, v {case.sql_type})")
    assert outcome.error is None, outcome.error
    r = random.Random(f"{case.name}-42")
    expected = []
    for i in range(ROWS):
        literal, value = case.make(r, i)
        outcome = executor.run_batch(f"INSERT INTO {table} (id, v) VALUES ({i}, {literal})")
        assert outcome.error is None, (literal, outcome.error)
        expected.append(value)
    return expected


def _python_bytes(outcome, monkeypatch) -> bytes:
    with monkeypatch.context() as m:
        m.setattr(render, "encode_rows", lambda columns, rows: None)
        return render.render(outcome)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_c_encoder_writes_the_python_encoders_bytes(sql_server, emulator, monkeypatch, case):
    executor = Executor(emulator.db, 1)
    _fill(executor, case)
    outcome = executor.run_batch(f"SELECT id, v FROM dbo.enc_{case.name} ORDER BY id")
    assert outcome.error is None
    result = outcome.results[0]
    assert isinstance(result.rows, arrowrows.ArrowRows)
    assert arrowrows.encode_rows(result.columns, result.rows) is not None  # the C path ran
    spec = arrowrows.column_spec(result.columns[1].type, result.columns[1].nullable)
    assert (spec is not None) == case.native
    assert render.render(outcome) == _python_bytes(outcome, monkeypatch)
    executor.close()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_decode_of_encode_is_the_value(sql_server, emulator, case):
    executor = Executor(emulator.db, 1)
    expected = _fill(executor, case)
    executor.close()
    text = f"Server=tcp:{sql_server.host},{sql_server.port};Encrypt=no"
    with _native.connect(text, user=sql_server.user, password=sql_server.password) as conn:
        table = pa.table(conn.execute(f"SELECT id, v FROM dbo.enc_{case.name} ORDER BY id"))
    got = table.column("v").to_pylist()
    if case.sql_type == "real":
        expected = [v if v is None else float(v) for v in expected]
    assert got == expected


def test_golden_query_goes_through_the_c_encoder_unchanged(sql_server, emulator, monkeypatch):
    executor = Executor(emulator.db, 1)
    outcome = executor.run_batch(golden.GOLDEN_SQL)
    assert outcome.error is None
    result = outcome.results[0]
    assert arrowrows.encode_rows(result.columns, result.rows) is not None
    assert render.render(outcome) == _python_bytes(outcome, monkeypatch)
    executor.close()


def test_code_page_text_is_encoded_by_python_and_copied(sql_server, emulator, monkeypatch):
    """Non-ASCII text in a code-page collation: that column's values come from Python's codec."""
    executor = Executor(emulator.db, 1)
    assert executor.run_batch("CREATE TABLE dbo.cp (v varchar(10))").error is None
    assert executor.run_batch("INSERT INTO dbo.cp VALUES ('café'), (NULL)").error is None
    outcome = executor.run_batch("SELECT v FROM dbo.cp")
    result = outcome.results[0]
    assert arrowrows.encode_rows(result.columns, result.rows) == b"\xd1\x04\x00caf\xe9\xd1\xff\xff"
    assert render.render(outcome) == _python_bytes(outcome, monkeypatch)
    executor.close()


def test_a_value_out_of_range_is_the_same_error_either_way(sql_server, emulator, monkeypatch):
    """The C encoder declines the whole result; the Python encoder sends error 8115."""
    executor = Executor(emulator.db, 1)
    outcome = executor.run_batch("SELECT CAST(300 AS int) AS v")
    result = outcome.results[0]
    result.columns[0] = type(result.columns[0])("v", type(result.columns[0].type)("tinyint"))
    assert arrowrows.encode_rows(result.columns, result.rows) is None
    c_bytes = render.render(outcome)
    assert c_bytes == _python_bytes(outcome, monkeypatch)
    assert "Arithmetic overflow".encode("utf-16-le") in c_bytes
    executor.close()


#: The types SQL Server sends with no length prefix when the column is NOT NULL (MS-TDS
#: 2.2.5.4.1, fixed-length types): the decoder's fixed-width paths, which the nullable columns
#: above (sent as INTN, FLTN, MONEYN, DATETIMN, BITN) do not reach.
FIXED_CASES = [
    c
    for c in CASES
    if c.name
    in {
        "tinyint",
        "smallint",
        "int",
        "bigint",
        "bit",
        "float",
        "real",
        "money",
        "smallmoney",
        "datetime",
        "smalldatetime",
    }
]


@pytest.mark.parametrize("case", FIXED_CASES, ids=lambda c: c.name)
def test_decode_of_encode_is_the_value_for_not_null_columns(sql_server, emulator, case):
    executor = Executor(emulator.db, 1)
    table = f"dbo.enc_nn_{case.name}"
    outcome = executor.run_batch(
        f"CREATE TABLE {table} (id int PRIMARY KEY, v {case.sql_type} NOT NULL)"
    )
    assert outcome.error is None, outcome.error
    r = random.Random(f"{case.name}-nn")
    expected = []
    for i in range(1, ROWS):  # row 0 of a case is its NULL
        literal, value = case.make(r, i)
        outcome = executor.run_batch(f"INSERT INTO {table} (id, v) VALUES ({i}, {literal})")
        assert outcome.error is None, (literal, outcome.error)
        expected.append(value)
    outcome = executor.run_batch(f"SELECT v FROM {table} ORDER BY id")
    assert outcome.error is None
    spec = arrowrows.column_spec(outcome.results[0].columns[0].type, False)
    assert spec is not None  # the C encoder writes the fixed-length form
    executor.close()
    text = f"Server=tcp:{sql_server.host},{sql_server.port};Encrypt=no"
    with _native.connect(text, user=sql_server.user, password=sql_server.password) as conn:
        got = pa.table(conn.execute(f"SELECT v FROM {table} ORDER BY id")).column("v").to_pylist()
    if case.sql_type == "real":
        expected = [float(v) for v in expected]
    assert got == expected


def test_decode_of_encode_across_packets_and_batches(sql_server, emulator):
    """Thousands of rows of mixed columns, read in small batches: rows split across packets
    (the decoder's resumed rows), batches that grow and reuse the buffers of released ones."""
    rows = 3_000
    executor = Executor(emulator.db, 1)
    outcome = executor.run_batch(
        "CREATE TABLE dbo.enc_many (id int NOT NULL PRIMARY KEY, big bigint, small tinyint "
        "NOT NULL, f float, name varchar(40), wide nvarchar(40), raw varbinary(20), "
        "g uniqueidentifier, at datetime, amount decimal(19,4))"
    )
    assert outcome.error is None, outcome.error
    r = random.Random("many")
    expected = []
    for start in range(0, rows, 250):
        values = []
        for i in range(start, start + 250):
            big = None if i % 7 == 0 else r.randint(-(2**63), 2**63 - 1)
            name = None if i % 5 == 0 else f"name {i} " + "x" * (i % 17)
            wide = None if i % 11 == 0 else f"wide {i} é€😀"
            raw = r.randbytes(i % 21)
            g = uuid.UUID(bytes=r.randbytes(16))
            at = dt.datetime(2024, 1, 1) + dt.timedelta(seconds=i * 37)
            amount = Decimal(r.randint(-(10**12), 10**12)) / 10000
            values.append(
                f"({i}, {'NULL' if big is None else big}, {i % 256}, {i / 7!r}, "
                f"{'NULL' if name is None else repr(name)}, "
                f"{'NULL' if wide is None else 'N' + repr(wide)}, 0x{raw.hex()}, '{g}', "
                f"'{at:%Y-%m-%d %H:%M:%S}', {amount})"
            )
            expected.append(
                {
                    "id": i,
                    "big": big,
                    "small": i % 256,
                    "f": i / 7,
                    "name": name,
                    "wide": wide,
                    "raw": raw,
                    "g": str(g).upper(),
                    "at": at,
                    "amount": amount,
                }
            )
        outcome = executor.run_batch(f"INSERT INTO dbo.enc_many VALUES {', '.join(values)}")
        assert outcome.error is None, outcome.error
    executor.close()
    text = f"Server=tcp:{sql_server.host},{sql_server.port};Encrypt=no;Packet Size=512"
    with _native.connect(text, user=sql_server.user, password=sql_server.password) as conn:
        result = conn.execute("SELECT * FROM dbo.enc_many ORDER BY id", batch_rows=700)
        batches = list(pa.RecordBatchReader.from_stream(result))
    assert [b.num_rows for b in batches] == [700, 700, 700, 700, 200]
    assert pa.Table.from_batches(batches).to_pylist() == expected
