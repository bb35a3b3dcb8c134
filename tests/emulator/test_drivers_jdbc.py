"""Microsoft's mssql-jdbc reads the golden all-types query exactly.

The Java side (tests/drivers/jdbc, built once per session with Maven into build/drivers/jdbc)
prints the first row as JSON: ``getString`` for date/time columns (SQL Server's own text with
every fractional digit), ``getObject`` otherwise. Modes: plaintext, ``encrypt=true`` with
``trustServerCertificate``, ``encrypt=true`` validating the emulator's CA (a PKCS12 trust
store made with keytool), and TDS 8.0 ``encrypt=strict`` (``serverCertificate``).
"""

from __future__ import annotations

import base64
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
PROJECT = ROOT / "tests" / "drivers" / "jdbc"
BUILD = ROOT / "build" / "drivers" / "jdbc"

#: Columns mssql-jdbc cannot read as SQL Server sends them, and why.
SKIP: dict[str, str] = {}


@pytest.fixture(scope="session")
def jdbc_classpath() -> str:
    if shutil.which("java") is None or shutil.which("mvn") is None:
        pytest.skip("needs a JDK and Maven (scripts/setup.sh installs both)")
    sources = [PROJECT / "pom.xml", *sorted((PROJECT / "src").rglob("*.java"))]
    jar = BUILD / "golden-jdbc-1.0.0.jar"
    fresh = jar.exists() and all(jar.stat().st_mtime >= s.stat().st_mtime for s in sources)
    if not fresh:
        proc = subprocess.run(
            ["mvn", "-q", "-B", "package", f"-Dgolden.build={BUILD}"],
            cwd=PROJECT,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        if proc.returncode != 0:
            pytest.fail(f"mvn package failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return f"{BUILD / 'classes'}:{BUILD / 'lib'}/*"


def run_golden(classpath: str, server, options: str) -> dict[str, object]:
    url = (
        f"jdbc:sqlserver://{server.host}:{server.port};databaseName={server.database};"
        f"user={server.user};password={server.password};{options}"
    )
    proc = subprocess.run(
        ["java", "-cp", classpath, "golden.Golden", url],
        input=golden.GOLDEN_SQL.encode("utf-8"),
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")[-3000:]
    rows = json.loads(proc.stdout.decode("utf-8"))
    return {r["name"]: convert(r) for r in rows}


def convert(item: dict[str, str]) -> object:  # noqa: PLR0911 (a dispatch over Java classes)
    """The Java value (class name and text) as the golden module's canonical value."""
    value, cls = item["value"], item["class"]
    if value is None:
        return None
    if cls in ("java.lang.Integer", "java.lang.Short", "java.lang.Long", "java.lang.Byte"):
        return int(value)
    if cls == "java.lang.Boolean":
        return value == "true"
    if cls in ("java.lang.Double", "java.lang.Float"):
        return float(value)
    if cls == "java.math.BigDecimal":
        return Decimal(value)
    if cls == "[B":
        return bytes.fromhex(value)
    if item["type"] == "uniqueidentifier":
        return uuid.UUID(value)
    if item["type"] in ("datetime", "smalldatetime"):
        # getString of these is java.sql.Timestamp.toString ("1753-01-01 00:00:00.0")
        head, _, frac = value.partition(".")
        if item["type"] == "smalldatetime":
            return head
        return head + "." + (frac + "000")[:3]
    return value


def expected(actual: dict[str, object]) -> dict[str, object]:
    want: dict[str, object] = {}
    for col in golden.COLUMNS:
        want[col.name] = col.value
    return want


def check(actual: dict[str, object], server) -> None:
    want = expected(actual)
    if server.emulator is None:
        want["rowversion"] = actual["rowversion"]
    bad = golden.mismatches(actual, want, SKIP)
    assert not bad, "\n".join(bad)


def test_plaintext(sql_server, jdbc_classpath):
    check(run_golden(jdbc_classpath, sql_server, "encrypt=false"), sql_server)


def test_encrypt_trust_server_certificate(sql_server, jdbc_classpath):
    options = "encrypt=true;trustServerCertificate=true"
    check(run_golden(jdbc_classpath, sql_server, options), sql_server)


def test_encrypt_validating_the_emulator_ca(emulator, jdbc_classpath, tmp_path):
    if shutil.which("keytool") is None:
        pytest.skip("needs keytool (JDK) to make a trust store")
    ca = emulator.write_ca(tmp_path / "ca.pem")
    store = tmp_path / "trust.p12"
    subprocess.run(
        [
            *("keytool", "-importcert", "-noprompt", "-alias", "emulator", "-file", str(ca)),
            *("-keystore", str(store), "-storetype", "PKCS12", "-storepass", "changeit"),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    options = (
        f"encrypt=true;trustServerCertificate=false;trustStore={store};"
        "trustStorePassword=changeit;trustStoreType=PKCS12;hostNameInCertificate=localhost"
    )
    check(run_golden(jdbc_classpath, emulator_target(emulator), options), emulator_target(emulator))


def test_strict_tds8(emulator, jdbc_classpath, tmp_path):
    ca = emulator.write_ca(tmp_path / "ca.pem")
    options = f"encrypt=strict;serverCertificate={ca}"
    check(run_golden(jdbc_classpath, emulator_target(emulator), options), emulator_target(emulator))


def emulator_target(emu):
    class Target:
        host = emu.host
        port = emu.port
        user = "sa"
        password = emu.password
        database = "master"
        emulator = emu

    return Target


def _statement_input(scenario) -> bytes:
    """The statements in golden.Statements's line format (base64 fields)."""
    lines = []
    for statement in scenario.statements:
        lines.append("S " + base64.b64encode(statement.sql.encode()).decode())
        for param in statement.params:
            raw = param.value if isinstance(param.value, bytes) else str(param.value).encode()
            lines.append(f"P {param.type} {base64.b64encode(raw).decode()}")
    return "\n".join(lines).encode()


def _value(item: dict[str, str]) -> object:
    """A value as golden.Statements printed it (class name and text) as plain Python."""
    value, cls = item["value"], item["class"]
    if value is None:
        return None
    if cls in ("java.lang.Integer", "java.lang.Short", "java.lang.Long", "java.lang.Byte"):
        return int(value)
    if cls == "java.lang.Boolean":
        return value == "true"
    if cls == "java.math.BigDecimal":
        return Decimal(value)
    if cls == "[B":
        return bytes.fromhex(value)
    return value


def run_statements(classpath: str, emulator, scenario) -> dict[str, cdc_tool.Outcome]:
    """Each statement through a mssql-jdbc PreparedStatement (``?`` markers: sp_prepexec)."""
    url = (
        f"jdbc:sqlserver://{emulator.host}:{emulator.port};databaseName=master;user=sa;"
        f"password={emulator.password};encrypt=false"
    )
    proc = subprocess.run(
        ["java", "-cp", classpath, "golden.Statements", url],
        input=_statement_input(scenario),
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


def test_the_statements_of_a_cdc_tool(emulator, jdbc_classpath):
    scenario = cdc_tool.prepare(emulator)
    bad = cdc_tool.check(scenario, run_statements(jdbc_classpath, emulator, scenario))
    assert not bad, "\n".join(bad)
