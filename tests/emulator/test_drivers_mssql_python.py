"""Microsoft ODBC Driver 18 through ``mssql-python`` reads the golden query exactly.

mssql-python loads the ODBC driver its companion wheel ``mssql-python-odbc`` ships; on Debian
the driver needs libltdl7, libkrb5-3 and libgssapi-krb5-2 (scripts/setup.sh installs them).
Modes: ``Encrypt=no``, ``Encrypt=yes;TrustServerCertificate=yes``, ``Encrypt=yes`` validating
the emulator's CA (OpenSSL's ``SSL_CERT_FILE``, host name ``localhost``), and TDS 8.0
``Encrypt=strict`` with ``ServerCertificate`` (the driver compares the certificate).
"""

from __future__ import annotations

import pytest

import cdc_tool
import golden

mssql_python = pytest.importorskip("mssql_python")

#: Columns ODBC Driver 18 / mssql-python cannot read as SQL Server sends them, and why.
SKIP: dict[str, str] = {}


def connect(server, extra: str):
    text = (
        f"Server=tcp:{server.host},{server.port};Database={server.database};"
        f"UID={server.user};PWD={server.password};{extra}"
    )
    try:
        return mssql_python.connect(text)
    except mssql_python.OperationalError as exc:
        if "Failed to load the driver" in str(exc):
            pytest.skip("ODBC Driver 18 does not load: install libltdl7 (scripts/setup.sh)")
        raise


def run_golden(server, extra: str) -> dict[str, object]:
    conn = connect(server, extra)
    try:
        cur = conn.cursor()
        cur.execute(golden.GOLDEN_SQL)
        row = cur.fetchone()
        names = [d[0] for d in cur.description]
    finally:
        conn.close()
    return dict(zip(names, row, strict=True))


def expected() -> dict[str, object]:
    return {c.name: golden.python_value(c) for c in golden.COLUMNS}


def check(actual: dict[str, object], server) -> None:
    want = expected()
    if server.emulator is None:
        want["rowversion"] = actual["rowversion"]
    bad = golden.mismatches(actual, want, SKIP)
    assert not bad, "\n".join(bad)


def test_plaintext(sql_server):
    check(run_golden(sql_server, "Encrypt=no"), sql_server)


def test_encrypt_trust_server_certificate(sql_server):
    check(run_golden(sql_server, "Encrypt=yes;TrustServerCertificate=yes"), sql_server)


def test_encrypt_validating_the_emulator_ca(sql_server, tmp_path, monkeypatch):
    if sql_server.emulator is None:
        pytest.skip("needs the emulator's CA")
    ca = sql_server.emulator.write_ca(tmp_path / "ca.pem")
    monkeypatch.setenv("SSL_CERT_FILE", str(ca))  # OpenSSL's default trust store
    extra = "Encrypt=yes;TrustServerCertificate=no;HostNameInCertificate=localhost"
    check(run_golden(sql_server, extra), sql_server)


def test_strict_tds8(sql_server, tmp_path):
    if sql_server.emulator is None:
        pytest.skip("needs the emulator's CA")
    ca = sql_server.emulator.write_ca(tmp_path / "ca.pem")
    check(run_golden(sql_server, f"Encrypt=strict;ServerCertificate={ca}"), sql_server)


def run_statements(emulator, scenario) -> dict[str, cdc_tool.Outcome]:
    """Each statement through ODBC Driver 18, its parameters bound with ``?`` (the driver
    prepares and executes them: sp_prepexec)."""
    target = type("T", (), {"host": emulator.host, "port": emulator.port, "user": "sa",
                            "password": emulator.password, "database": "master"})  # fmt: skip
    outcomes: dict[str, cdc_tool.Outcome] = {}
    conn = connect(target, "Encrypt=no")
    try:
        conn.autocommit = True
        cur = conn.cursor()
        for statement in scenario.statements:
            outcome = outcomes[statement.name] = cdc_tool.Outcome()
            try:
                params = [p.value for p in statement.params]
                if params:
                    cur.execute(statement.sql, params)
                else:
                    cur.execute(statement.sql)
                while True:
                    if cur.description:
                        outcome.results.append([tuple(r) for r in cur.fetchall()])
                    if not cur.nextset():
                        break
            except mssql_python.Error as exc:
                outcome.error = _number(exc)
    finally:
        conn.close()
    return outcomes


def _number(exc: Exception) -> int | None:
    """The SQL Server error number in an ODBC error (the driver puts its text in the message)."""
    text = str(exc)
    for number in (40517, 195, 207, 208, 8179):
        if "[SQL Server]" in text and _message_of(number) in text:
            return number
    return None


def _message_of(number: int) -> str:
    return {
        40517: "is not supported in this version of SQL Server",
        195: "is not a recognized built-in function name",
        207: "Invalid column name",
        208: "Invalid object name",
        8179: "Could not find prepared statement",
    }[number]


def test_the_statements_of_a_cdc_tool(emulator):
    scenario = cdc_tool.prepare(emulator)
    bad = cdc_tool.check(scenario, run_statements(emulator, scenario))
    assert not bad, "\n".join(bad)
