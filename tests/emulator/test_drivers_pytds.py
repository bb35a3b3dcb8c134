"""python-tds (pure Python TDS) reads the golden all-types query exactly.

Modes: plaintext; TLS for the login packet only (PRELOGIN ENCRYPT_OFF, the client's
``enc_login_only``); full TLS validating the emulator's CA. python-tds has no "trust the server
certificate" switch (it encrypts only when given a CA file) and no TDS 8.0 strict (no ALPN).
"""

from __future__ import annotations

import pytest

import cdc_tool
import golden

pytds = pytest.importorskip("pytds")

#: Columns python-tds decodes differently from SQL Server's bytes, and why.
SKIP: dict[str, str] = {}


def expected() -> dict[str, object]:
    out = {c.name: golden.python_value(c) for c in golden.COLUMNS}
    # python-tds does not announce UTF8_SUPPORT, so SQL Server sends the closest code page
    out["varchar_utf8"] = golden.utf8_downgraded(str(golden.by_name("varchar_utf8").value))
    # datetime arrives as 1/300 s ticks; python-tds rounds them to milliseconds
    return out


def run_golden(server, **kwargs) -> dict[str, object]:
    with (
        pytds.connect(
            server.host,
            port=server.port,
            user=server.user,
            password=server.password,
            database=server.database,
            autocommit=True,
            **kwargs,
        ) as conn,
        conn.cursor() as cur,
    ):
        cur.execute(golden.GOLDEN_SQL)
        row = cur.fetchone()
        names = [d[0] for d in cur.description]
    return dict(zip(names, row, strict=True))


def check(actual: dict[str, object], server) -> None:
    want = expected()
    if server.emulator is None:  # a real server's rowversion is its own
        want["rowversion"] = actual["rowversion"]
    bad = golden.mismatches(actual, want, SKIP)
    assert not bad, "\n".join(bad)


def test_plaintext(sql_server):
    check(run_golden(sql_server), sql_server)


def test_login_only_encryption(sql_server, tmp_path):
    if sql_server.emulator is None:
        pytest.skip("needs the emulator's CA")
    pytest.importorskip("OpenSSL", reason="python-tds encrypts through pyOpenSSL (dev extra)")
    ca = sql_server.emulator.write_ca(tmp_path / "ca.pem")
    check(
        run_golden(sql_server, cafile=str(ca), enc_login_only=True, validate_host=False),
        sql_server,
    )


def test_tls_validating_the_emulator_ca(sql_server, tmp_path):
    if sql_server.emulator is None:
        pytest.skip("needs the emulator's CA")
    pytest.importorskip("OpenSSL", reason="python-tds encrypts through pyOpenSSL (dev extra)")
    ca = sql_server.emulator.write_ca(tmp_path / "ca.pem")
    # validate_host=True breaks in python-tds 1.17 with pyOpenSSL 26 (X509.get_extension is
    # gone); the chain is still validated against the CA
    check(run_golden(sql_server, cafile=str(ca), validate_host=False), sql_server)


def _bind(param: cdc_tool.Param) -> object:
    """python-tds sends ``bytes`` as a string; ``pytds.Binary`` as varbinary."""
    return pytds.Binary(param.value) if param.type == "varbinary" else param.value


def run_statements(emulator, scenario) -> dict[str, cdc_tool.Outcome]:
    """Each statement through python-tds, its parameters bound (``%s``: sp_executesql)."""
    outcomes: dict[str, cdc_tool.Outcome] = {}
    with (
        pytds.connect(
            emulator.host, port=emulator.port, user="sa", password=emulator.password,
            autocommit=True,
        ) as conn,
        conn.cursor() as cur,
    ):  # fmt: skip
        for statement in scenario.statements:
            outcome = outcomes[statement.name] = cdc_tool.Outcome()
            try:
                params = tuple(_bind(p) for p in statement.params) or None
                cur.execute(cdc_tool.markers(statement.sql, "format"), params)
                while True:
                    if cur.description:
                        outcome.results.append([tuple(r) for r in cur.fetchall()])
                    if not cur.nextset():
                        break
            except pytds.Error as exc:
                outcome.error = getattr(exc, "msg_no", None)
    return outcomes


def test_the_statements_of_a_cdc_tool(emulator):
    scenario = cdc_tool.prepare(emulator)
    bad = cdc_tool.check(scenario, run_statements(emulator, scenario))
    assert not bad, "\n".join(bad)
