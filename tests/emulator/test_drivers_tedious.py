"""tedious (Node.js) reads the golden all-types query exactly.

tests/drivers/tedious/golden.js prints the first row as JSON; ``npm ci`` runs once per
session into a copy under build/drivers/tedious. Modes: plaintext, ``encrypt`` with
``trustServerCertificate``, ``encrypt`` validating the emulator's CA, and TDS 8.0 strict
(``encrypt: 'strict'``, ALPN tds/8.0).

What tedious itself cannot carry, checked in its own form rather than skipped:

* decimal/numeric/money arrive as a JS ``number`` (float64), so each is compared with the
  float64 nearest to the exact value; those whose exact value tedious's own arithmetic does
  not round to that float are listed in SKIP with the reason;
* date/time values arrive as a JS ``Date`` in UTC (milliseconds) plus ``nanosecondsDelta`` for
  the digits below, and ``datetimeoffset`` loses its offset: the test compares the instant.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import subprocess
import uuid
from decimal import Decimal
from pathlib import Path

import pytest

import cdc_tool
import golden

ROOT = Path(__file__).resolve().parents[2]
PROJECT = ROOT / "tests" / "drivers" / "tedious"
BUILD = ROOT / "build" / "drivers" / "tedious"

#: Columns tedious cannot read as SQL Server sends them, and why.
SKIP: dict[str, str] = {
    # tedious computes a decimal as magnitude / 10**scale in float64 arithmetic, which is one
    # ulp away from the float64 nearest to -123456789012345678.0123456789
    "dec28_10": "tedious's float64 decimal arithmetic is 1 ulp off the correctly rounded value",
}


@pytest.fixture(scope="session")
def tedious_dir() -> Path:
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("needs Node.js and npm")
    BUILD.mkdir(parents=True, exist_ok=True)
    for name in ("package.json", "package-lock.json", "golden.js", "statements.js"):
        shutil.copy2(PROJECT / name, BUILD / name)
    marker = BUILD / "node_modules" / ".package-lock.json"
    lock = PROJECT / "package-lock.json"
    if not marker.exists() or marker.stat().st_mtime < lock.stat().st_mtime:
        proc = subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund"],
            cwd=BUILD,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        if proc.returncode != 0:
            pytest.fail(f"npm ci failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return BUILD


def run_golden(folder: Path, server, **options) -> dict[str, object]:
    settings = {
        "host": server.host,
        "port": server.port,
        "database": server.database,
        "user": server.user,
        "password": server.password,
        "encrypt": False,
        "trustServerCertificate": False,
    } | options
    proc = subprocess.run(
        ["node", str(folder / "golden.js"), json.dumps(settings)],
        input=golden.GOLDEN_SQL.encode("utf-8"),
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")[-3000:]
    row = json.loads(proc.stdout.decode("utf-8"))
    return {name: convert(item) for name, item in row.items()}


def _instant(iso: str, ns: float) -> str:
    """A JS Date (UTC ISO text) plus nanosecondsDelta as 'YYYY-MM-DD hh:mm:ss.fffffff' UTC."""
    millis = dt.datetime.fromisoformat(iso.replace("Z", "+00:00")).microsecond // 1000
    ticks = millis * 10_000 + round(ns * 10_000_000)
    return iso[:10] + " " + iso[11:19] + f".{ticks:07d}"


def convert(item: dict[str, object]) -> object:  # noqa: PLR0911 (a dispatch over kinds)
    kind, value = item["kind"], item["value"]
    if kind == "null":
        return None
    if kind == "date":
        return _instant(str(value), float(item.get("ns") or 0))
    if kind == "buffer":
        return bytes.fromhex(str(value))
    if kind == "boolean":
        return value == "true"
    if kind == "number":
        text = str(value)
        exact = item["type"] in ("IntN", "TinyInt", "SmallInt", "Int", "BigInt", "Variant")
        return int(text) if exact and _is_int(text) else float(text)
    if item["type"] == "UniqueIdentifier":
        return uuid.UUID(str(value))
    if item["type"] in ("BigInt", "IntN") or (item["type"] == "Variant" and _is_int(str(value))):
        return int(str(value))
    return value


def _is_int(text: str) -> bool:
    return text.lstrip("-").isdigit()


def _utc_text(col: golden.GoldenColumn) -> str | None:
    """The golden date/time value as tedious's instant text (UTC, 7 digits)."""
    text = col.value
    if text is None:
        return None
    assert isinstance(text, str)
    kind = col.kind if col.kind != "variant" else col.base_type.split("(")[0]
    offset = dt.timedelta()
    if kind == "datetimeoffset":
        text, _, zone = text.rpartition(" ")
        sign = -1 if zone[0] == "-" else 1
        offset = sign * dt.timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6]))
    if kind == "time":
        text = "1970-01-01 " + text
    if kind == "date":
        text += " 00:00:00"
    head, _, frac = text.partition(".")
    ticks = int((frac + "0000000")[:7])
    moment = dt.datetime.fromisoformat(head) - offset
    return moment.strftime("%Y-%m-%d %H:%M:%S").rjust(19, "0") + f".{ticks:07d}"


def expected() -> dict[str, object]:
    want: dict[str, object] = {}
    for col in golden.COLUMNS:
        value = col.value
        base = col.kind if col.kind != "variant" else col.base_type.split("(")[0]
        if base in ("date", "time", "datetime", "datetime2", "datetimeoffset", "smalldatetime"):
            value = _utc_text(col)
        elif isinstance(value, Decimal):
            value = float(value)
        want[col.name] = value
    return want


def check(actual: dict[str, object], server) -> None:
    want = expected()
    if server.emulator is None:
        want["rowversion"] = actual["rowversion"]
    bad = golden.mismatches(actual, want, SKIP)
    assert not bad, "\n".join(bad)


def test_plaintext(sql_server, tedious_dir):
    check(run_golden(tedious_dir, sql_server), sql_server)


def test_encrypt_trust_server_certificate(sql_server, tedious_dir):
    actual = run_golden(tedious_dir, sql_server, encrypt=True, trustServerCertificate=True)
    check(actual, sql_server)


def test_encrypt_validating_the_emulator_ca(sql_server, tedious_dir, tmp_path):
    if sql_server.emulator is None:
        pytest.skip("needs the emulator's CA")
    ca = str(sql_server.emulator.write_ca(tmp_path / "ca.pem"))
    check(run_golden(tedious_dir, sql_server, encrypt=True, ca=ca), sql_server)


def test_strict_tds8(sql_server, tedious_dir, tmp_path):
    if sql_server.emulator is None:
        pytest.skip("needs the emulator's CA")
    ca = str(sql_server.emulator.write_ca(tmp_path / "ca.pem"))
    check(run_golden(tedious_dir, sql_server, encrypt="strict", ca=ca), sql_server)


def _value(item: dict[str, object]) -> object:
    """A value as statements.js printed it, as plain Python (tedious's number is a JS double:
    integers and decimals come back from its text)."""
    kind, value = item["kind"], item["value"]
    if kind == "null":
        return None
    if kind == "buffer":
        return bytes.fromhex(str(value))
    if kind == "boolean":
        return value == "true"
    if kind == "number":
        text = str(value)
        if item["type"] == "Decimal" or item["type"] == "Numeric":
            return Decimal(text)
        return int(text) if _is_int(text) else float(text)
    return value


def run_statements(folder: Path, emulator, scenario) -> dict[str, cdc_tool.Outcome]:
    """Each statement through tedious: with parameters prepared (sp_prepare), executed twice
    (sp_execute) and unprepared (sp_unprepare); without, as a batch."""
    settings = {
        "host": emulator.host,
        "port": emulator.port,
        "database": "master",
        "user": "sa",
        "password": emulator.password,
    }
    statements = [
        {
            "sql": cdc_tool.markers(s.sql, "named"),
            "params": [
                {"type": p.type, "value": p.value.hex() if isinstance(p.value, bytes) else p.value}
                for p in s.params
            ],
        }
        for s in scenario.statements
    ]
    proc = subprocess.run(
        ["node", str(folder / "statements.js"), json.dumps(settings)],
        input=json.dumps(statements).encode("utf-8"),
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")[-3000:]
    printed = json.loads(proc.stdout.decode("utf-8"))
    outcomes = {}
    for statement, got in zip(scenario.statements, printed, strict=True):
        results = [[tuple(_value(v) for v in row) for row in rows] for rows in got["results"]]
        outcomes[statement.name] = cdc_tool.Outcome(results, got["error"])
    return outcomes


def test_the_statements_of_a_cdc_tool(emulator, tedious_dir):
    scenario = cdc_tool.prepare(emulator)
    bad = cdc_tool.check(scenario, run_statements(tedious_dir, emulator, scenario))
    assert not bad, "\n".join(bad)
