"""pymssql (FreeTDS db-lib, statically built into the wheel) reads the golden query exactly.

Modes: plaintext, ``encryption=require`` (FreeTDS does not check the certificate unless given
a CA file), TLS validating the emulator's CA, and TDS 8.0 strict (FreeTDS 1.5+). The last two
go through a freetds.conf named by ``FREETDSCONF`` with ``ca file``/``encryption = strict``.
"""

from __future__ import annotations

import os

import pytest

import cdc_tool
import golden

pymssql = pytest.importorskip("pymssql")

#: Columns FreeTDS/pymssql cannot read as SQL Server sends them, and why.
SKIP: dict[str, str] = {
    # pymssql hands a sql_variant over as the bytes of FreeTDS's in-memory form of the base
    # value; for decimal and datetime2 that is FreeTDS's own struct (TDS_NUMERIC,
    # TDS_DATETIMEALL), not a wire or SQL value, so there is nothing SQL Server-defined to
    # compare. The other sql_variant columns are checked as those bytes (see expected()).
    "variant_decimal": "pymssql returns FreeTDS's TDS_NUMERIC struct bytes",
    "variant_datetime2": "pymssql returns FreeTDS's TDS_DATETIMEALL struct bytes",
}


def expected() -> dict[str, object]:
    out = {c.name: golden.python_value(c) for c in golden.COLUMNS}
    # sql_variant: the base value's bytes (little-endian integers, text converted to UTF-8)
    out["variant_int"] = (123).to_bytes(4, "little", signed=True)
    out["variant_bigint"] = (-5000000000).to_bytes(8, "little", signed=True)
    out["variant_nvarchar"] = "vär😀".encode()
    out["variant_varchar"] = b"abc"
    return out


def run_golden(server, **kwargs) -> dict[str, object]:
    options = {"server": server.host, "port": str(server.port)} | kwargs
    conn = pymssql.connect(
        user=server.user,
        password=server.password,
        database=server.database,
        tds_version="7.4",
        **options,
    )
    try:
        cur = conn.cursor()
        cur.execute(golden.GOLDEN_SQL)
        row = cur.fetchone()
        names = [d[0] for d in cur.description]
    finally:
        conn.close()
    return dict(zip(names, row, strict=True))


def check(actual: dict[str, object], server) -> None:
    want = expected()
    if server.emulator is None:
        want["rowversion"] = actual["rowversion"]
    bad = golden.mismatches(actual, want, SKIP)
    assert not bad, "\n".join(bad)


def test_plaintext(sql_server):
    check(run_golden(sql_server), sql_server)


def test_encryption_require_without_validation(sql_server):
    check(run_golden(sql_server, encryption="require"), sql_server)


def _conf(emulator, tmp_path, encryption: str) -> None:
    ca = emulator.write_ca(tmp_path / "ca.pem")
    conf = tmp_path / "freetds.conf"
    conf.write_text(
        "[emulator]\n"
        f"\thost = 127.0.0.1\n\tport = {emulator.port}\n\ttds version = 7.4\n"
        f"\tencryption = {encryption}\n\tca file = {ca}\n\tcheck certificate hostname = no\n"
    )
    os.environ["FREETDSCONF"] = str(conf)


def test_tls_validating_the_emulator_ca(emulator, tmp_path, monkeypatch):
    monkeypatch.setenv("FREETDSCONF", "")
    _conf(emulator, tmp_path, "require")
    target = type("T", (), {"user": "sa", "password": emulator.password, "database": "master"})
    target.emulator = emulator
    conn_kwargs = {"server": "emulator", "port": str(emulator.port)}
    check(run_golden_named(target, **conn_kwargs), target)


def test_strict_tds8(emulator, tmp_path, monkeypatch):
    monkeypatch.setenv("FREETDSCONF", "")
    _conf(emulator, tmp_path, "strict")
    target = type("T", (), {"user": "sa", "password": emulator.password, "database": "master"})
    target.emulator = emulator
    check(run_golden_named(target, server="emulator", port=str(emulator.port)), target)


def run_golden_named(target, **kwargs) -> dict[str, object]:
    conn = pymssql.connect(
        user=target.user, password=target.password, database=target.database, **kwargs
    )
    try:
        cur = conn.cursor()
        cur.execute(golden.GOLDEN_SQL)
        row = cur.fetchone()
        names = [d[0] for d in cur.description]
    finally:
        conn.close()
    return dict(zip(names, row, strict=True))


def _variant(value: object) -> object:
    """A sql_variant as pymssql hands it over (the bytes of FreeTDS's form of the base value:
    see SKIP): text as UTF-8, an int as 4 little-endian bytes."""
    if not isinstance(value, bytes):
        return value
    if len(value) == 4 and any(b < 0x20 for b in value):
        return int.from_bytes(value, "little", signed=True)
    return value.decode("utf-8")


def run_statements(emulator, scenario) -> dict[str, cdc_tool.Outcome]:
    """Each statement through pymssql (FreeTDS), its parameters bound as pymssql binds them
    (``%s``, quoted into the batch on the client)."""
    outcomes: dict[str, cdc_tool.Outcome] = {}
    conn = pymssql.connect(
        server=emulator.host, port=str(emulator.port), user="sa", password=emulator.password,
        database="master", tds_version="7.4", autocommit=True,
    )  # fmt: skip
    try:
        cur = conn.cursor()
        for statement in scenario.statements:
            outcome = outcomes[statement.name] = cdc_tool.Outcome()
            try:
                params = tuple(p.value for p in statement.params) or None
                cur.execute(cdc_tool.markers(statement.sql, "format"), params)
                while True:
                    if cur.description:
                        rows = [tuple(r) for r in cur.fetchall()]
                        if statement.name == "SERVERPROPERTY":
                            rows = [tuple(_variant(v) for v in r) for r in rows]
                        outcome.results.append(rows)
                    if not cur.nextset():
                        break
            except pymssql.Error as exc:
                outcome.error = exc.args[0] if exc.args and isinstance(exc.args[0], int) else -1
    finally:
        conn.close()
    return outcomes


def test_the_statements_of_a_cdc_tool(emulator):
    scenario = cdc_tool.prepare(emulator)
    bad = cdc_tool.check(scenario, run_statements(emulator, scenario))
    assert not bad, "\n".join(bad)
