"""The AdventureWorks loader: tables, row counts and exact values read back over TDS."""

from __future__ import annotations

import datetime as dt
import gzip
import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

pytds = pytest.importorskip("pytds")

from mssql_cdc.emulator import DEFAULT_PASSWORD  # noqa: E402
from mssql_cdc.emulator.__main__ import main  # noqa: E402
from mssql_cdc.emulator.adventureworks import default_directory, parse_type, read_tables  # noqa: E402
from mssql_cdc.emulator.engine.database import Database  # noqa: E402
from mssql_cdc.emulator.protocol.types import MAX, scalar  # noqa: E402
from mssql_cdc.emulator.workload import WorkloadError, enable_cdc  # noqa: E402

# the packaged data (or $MSSQL_CDC_ADVENTUREWORKS): missing data fails collection, never skips
DATA = default_directory()
TABLES = json.loads((DATA / "tables.json").read_text(encoding="utf-8"))["tables"]


@pytest.fixture
def cur(emulator):
    conn = pytds.connect(
        emulator.host, port=emulator.port, user="sa", password=emulator.password, autocommit=True
    )
    yield conn.cursor()
    conn.close()


def one(cur, sql):
    cur.execute(sql)
    rows = cur.fetchall()
    assert len(rows) == 1, rows
    return tuple(rows[0])


def test_every_table_loads_with_the_row_count_of_tables_json_and_computed_values_agree(
    emulator, cur
):
    report = emulator.load_adventureworks(DATA)
    expected = {f"{t['schema']}.{t['name']}": t["rows"] for t in TABLES}
    assert report.rows == expected
    assert [t.computed_mismatches for t in report.tables] == [0] * 6
    for name, rows in expected.items():
        assert one(cur, f"SELECT COUNT(*) FROM {name}") == (rows,)
    assert report.seconds > 0  # the load's duration is reported; its speed is a benchmark's


def test_first_and_last_rows_keep_their_types(emulator, cur):
    emulator.load_adventureworks(DATA)
    assert one(cur, "SELECT * FROM Sales.Customer WHERE CustomerID = 1") == (
        1,
        None,
        934,
        1,
        "AW00000001",
        uuid.UUID("3F5AE95E-B87D-4AED-95B4-C3797AFCB74F"),
        dt.datetime(2025, 9, 11, 11, 15, 7, 263000),
    )
    assert one(cur, "SELECT * FROM Sales.Customer WHERE CustomerID = 30118") == (
        30118,
        1993,
        1994,
        3,
        "AW00030118",
        uuid.UUID("2495B4EB-FE8B-459E-A1B6-DBA25C04E626"),
        dt.datetime(2025, 9, 11, 11, 15, 7, 263000),
    )
    assert one(
        cur, "SELECT * FROM Purchasing.PurchaseOrderHeader WHERE PurchaseOrderID = 4012"
    ) == (
        4012,
        10,
        2,
        254,
        1636,
        3,
        dt.datetime(2025, 6, 23),
        dt.datetime(2025, 7, 18),
        Decimal("997680.0000"),
        Decimal("79814.4000"),
        Decimal("19953.6000"),
        Decimal("1097448.0000"),
        dt.datetime(2026, 8, 11, 12, 25, 46, 483000),
    )
    assert one(
        cur,
        "SELECT * FROM Purchasing.PurchaseOrderDetail "
        "WHERE PurchaseOrderID = 4012 AND PurchaseOrderDetailID = 8845",
    ) == (
        4012,
        8845,
        dt.datetime(2025, 7, 23),
        6000,
        884,
        Decimal("41.5700"),
        Decimal("249420.0000"),
        Decimal("6000.00"),
        Decimal("0.00"),
        Decimal("6000.00"),
        dt.datetime(2026, 8, 11, 12, 25, 46, 483000),
    )
    assert one(cur, "SELECT * FROM Sales.CurrencyRate WHERE CurrencyRateID = 13532") == (
        13532,
        dt.datetime(2025, 5, 30),
        "USD",
        "USD",
        Decimal("1.0000"),
        Decimal("1.0000"),
        dt.datetime(2025, 1, 1, 17, 39, 45, 260000),
    )


def test_product_keeps_nulls_bits_padded_nchar_money_and_decimal(emulator, cur):
    emulator.load_adventureworks(DATA, tables=["Production.Product"])
    row = one(cur, "SELECT * FROM Production.Product WHERE ProductID = 999")
    assert row == (
        999,
        "Road-750 Black, 52",
        "BK-R19B-52",
        True,
        True,
        "Black",
        100,
        75,
        Decimal("343.6496"),
        Decimal("539.9900"),
        "52",
        "CM ",
        "LB ",
        Decimal("20.42"),
        4,
        "R ",
        "L ",
        "U ",
        2,
        31,
        dt.datetime(2024, 5, 29),
        None,
        None,
        uuid.UUID("AE638923-2B67-4679-B90E-ABBAB17DCA31"),
        dt.datetime(2025, 2, 7, 10, 1, 36, 827000),
    )
    first = one(
        cur,
        "SELECT Name, MakeFlag, Color, StandardCost, Weight FROM Production.Product "
        "WHERE ProductID = 1",
    )
    assert first == ("Adjustable Race", False, None, Decimal("0.0000"), None)


def test_non_ascii_email_addresses_survive_as_nvarchar(emulator, cur):
    emulator.load_adventureworks(DATA, tables=["Person.EmailAddress"])
    assert one(cur, "SELECT EmailAddress FROM Person.EmailAddress WHERE EmailAddressID = 270") == (
        "françois0@adventure-works.com",
    )
    assert one(
        cur,
        "SELECT BusinessEntityID, EmailAddressID FROM Person.EmailAddress "
        "WHERE EmailAddress = N'niñia0@adventure-works.com'",
    ) == (4474, 3669)
    assert one(cur, "SELECT * FROM Person.EmailAddress WHERE EmailAddressID = 19972") == (
        20777,
        19972,
        "crystal21@adventure-works.com",
        uuid.UUID("012BBEBE-FC99-4C4E-B2BF-6F21E2CF19D3"),
        dt.datetime(2024, 10, 15),
    )


def test_identity_continues_after_the_largest_loaded_value_and_computed_columns_compute(
    emulator, cur
):
    emulator.load_adventureworks(DATA, tables=["Sales.Customer"])
    cur.execute(
        "INSERT INTO Sales.Customer (PersonID, StoreID, TerritoryID, rowguid, ModifiedDate) "
        "VALUES (7, NULL, 2, '00000000-0000-4000-8000-000000000001', '2026-01-02 03:04:05.007')"
    )
    assert one(cur, "SELECT CustomerID, AccountNumber FROM Sales.Customer WHERE PersonID = 7") == (
        30119,
        "AW00030119",
    )


def test_unknown_or_already_loaded_tables_are_refused(emulator):
    with pytest.raises(ValueError, match=r"unknown AdventureWorks table 'Sales\.Nope'"):
        emulator.load_adventureworks(DATA, tables=["Sales.Nope"])
    emulator.load_adventureworks(DATA, tables=["Product"])
    with pytest.raises(ValueError, match=r"Production\.Product already exists"):
        emulator.load_adventureworks(DATA, tables=["Production.Product"])


def test_files_with_a_utf16_byte_order_mark_and_crlf_rows_load_too(tmp_path, emulator, cur):
    spec = next(t for t in TABLES if t["name"] == "EmailAddress")
    plain, packed = DATA / spec["file"], DATA / (spec["file"] + ".gz")
    data = plain.read_bytes() if plain.is_file() else gzip.decompress(packed.read_bytes())
    text = data.decode("utf-8").replace("\n", "\r\n")
    (tmp_path / spec["file"]).write_bytes(text.encode("utf-16"))  # BOM + UTF-16 LE
    (tmp_path / "tables.json").write_text(json.dumps({"tables": [spec]}), encoding="utf-8")
    report = emulator.load_adventureworks(tmp_path)
    assert report.rows == {"Person.EmailAddress": 19972}
    assert one(cur, "SELECT EmailAddress FROM Person.EmailAddress WHERE EmailAddressID = 282") == (
        "josé1@adventure-works.com",
    )


def test_alias_types_are_read_as_their_base_types():
    product = next(t for t in read_tables(DATA) if t.name == "Product")
    name, make_flag = product.columns[1], product.columns[3]
    assert (name.alias, name.type) == ("dbo.Name", scalar("nvarchar", length=50))
    assert (make_flag.alias, make_flag.type) == ("dbo.Flag", scalar("bit"))
    assert parse_type("decimal(9,2)") == scalar("decimal", precision=9, scale=2)
    assert parse_type("money") == scalar("money", precision=19, scale=4)
    assert parse_type("nvarchar(max)") == scalar("nvarchar", length=MAX)


@contextmanager
def command_line_emulator(*args: str, **popen: Any) -> Iterator[Any]:
    """``python -m mssql_cdc.emulator --port 0 *args`` started; yields a pytds cursor of a
    connection to it once it says ``ready``, and stops it (exit code 0) afterwards."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "mssql_cdc.emulator", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        **popen,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        host, _, port = line.removeprefix("ready ").strip().rpartition(":")
        conn = pytds.connect(
            host, port=int(port), user="sa", password=DEFAULT_PASSWORD, autocommit=True
        )
        try:
            yield conn.cursor()
        finally:
            conn.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0


@pytest.mark.skipif(bool(os.environ.get("MSSQL_CDC_TEST_SERVER")), reason="starts an emulator")
@pytest.mark.parametrize("directory", [[str(DATA)], []], ids=["given", "packaged"])
def test_command_line_loads_before_it_prints_ready(directory):
    # "packaged": --adventureworks alone, run from / (no checkout around it) without the
    # environment variable, loads the copy inside the package
    env = {k: v for k, v in os.environ.items() if k != "MSSQL_CDC_ADVENTUREWORKS"}
    tables = ["--adventureworks-tables", "Sales.CurrencyRate,Production.Product"]
    with command_line_emulator("--adventureworks", *directory, *tables, cwd="/", env=env) as cur:
        assert one(cur, "SELECT COUNT(*) FROM Sales.CurrencyRate") == (13532,)
        assert one(cur, "SELECT COUNT(*) FROM Production.Product") == (504,)


@pytest.mark.skipif(bool(os.environ.get("MSSQL_CDC_TEST_SERVER")), reason="starts an emulator")
def test_command_line_enables_cdc_on_the_tables_it_loads():
    tables = ["--adventureworks-tables", "Sales.CurrencyRate"]
    with command_line_emulator("--adventureworks", *tables, "--cdc") as cur:
        cur.execute("EXEC sys.sp_cdc_help_change_data_capture")
        columns = [d[0] for d in cur.description]
        instances = [row[columns.index("capture_instance")] for row in cur.fetchall()]
    assert instances == ["Sales_CurrencyRate"]


def test_command_line_cdc_needs_adventureworks(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--port", "0", "--cdc"])
    assert exit_.value.code == 2
    assert "--cdc needs --adventureworks" in capsys.readouterr().err


def test_command_line_rejects_a_directory_without_tables_json(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--port", "0", "--adventureworks", str(Path(tmp_path))])
    assert exc.value.code == 2
    assert "no tables.json" in capsys.readouterr().err


def test_enable_cdc_names_a_table_it_cannot_read():
    db = Database()
    try:
        with pytest.raises(WorkloadError, match=r"'Customer': expected schema\.table"):
            enable_cdc(db, ["Customer"])
    finally:
        db.close()
