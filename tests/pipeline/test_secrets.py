"""No secret in plan strings, progress, reprs or logs: a password inside ``connectionString``
is moved to the redacted ``password`` option, and sessions redact ``connectionString``."""

from __future__ import annotations

import logging

import pytest

from mssql_cdc import register, stream
from mssql_cdc.connection_string import attributes, has_password, move_password

REDACTION_CONF = "spark.sql.redaction.options.regex"


def test_the_password_moves_out_of_the_connection_string():
    text = "Server=tcp:db,1433; UID = u ;PWD={a;b}}c};Encrypt=no"
    moved = move_password({"connectionString": text, "captureInstance": "ci"})
    assert moved == {
        "connectionString": "Server=tcp:db,1433;UID = u;Encrypt=no",
        "captureInstance": "ci",
        "password": "a;b}c",
    }
    # the last one wins, as in the native client; a given password option overrides both
    assert move_password({"connectionString": "Server=db;Password=x;pwd=y"})["password"] == "y"
    given = move_password({"connectionString": "Server=db;PWD=x", "password": "p"})
    assert given == {"connectionString": "Server=db", "password": "p"}
    assert move_password({"connectionString": "Server=db"}) == {"connectionString": "Server=db"}
    assert not has_password("Server=db;App={PWD=x}")
    assert has_password("Server=db;AccessToken=t")
    with pytest.raises(ValueError, match="no closing") as info:
        attributes("Server=db;PWD={s3cret")
    assert "s3cret" not in str(info.value)
    assert "s3cret" not in repr(attributes("PWD=s3cret"))


def test_no_password_in_explain_progress_reprs_or_logs(spark, source, tmp_path, capsys, caplog):
    secret = source.server.password
    options = source.options()
    del options["password"]
    options["connectionString"] += f";PWD={secret}"
    caplog.set_level(logging.DEBUG, logger="mssql_cdc")
    cdc = stream(spark, options)
    assert secret not in cdc.options["connectionString"]
    assert cdc.options["password"] == secret
    assert "connectionstring" in spark.conf.get(REDACTION_CONF).lower()
    source.workload(1)
    query = cdc.to_delta(
        str(tmp_path / "bronze"),
        app_id="secret-v1",
        checkpoint=str(tmp_path / "cp"),
        facts_table=str(tmp_path / "facts"),
        trigger={"availableNow": True},
    )
    query.awaitTermination()
    assert query.lastProgress["numInputRows"] > 0 or len(query.recentProgress) > 1
    query.explain(extended=True)
    # the stream's plan as to_delta builds it, and by hand with the password left in the
    # connection string (redacted by the session's pattern)
    spark.readStream.format("mssql_cdc").options(**cdc.options).load().explain(mode="extended")
    register(spark)
    by_hand = spark.readStream.format("mssql_cdc").options(**options).load()
    by_hand.explain(mode="extended")
    spark.read.format("mssql_cdc_snapshot").options(**options).load().explain(mode="extended")
    shown = capsys.readouterr().out
    assert "StreamingRelationV2" in shown
    assert "password=*********(redacted)" in shown
    assert "connectionString=*********(redacted)" in shown
    texts = [shown, str(query.lastProgress), str(query.recentProgress), str(query.name)]
    texts += [str(q.status) for q in (query,)]
    texts.append(caplog.text)
    for text in texts:
        assert secret not in text


def test_reprs_of_the_data_source_and_readers_hold_no_secret():
    from pyspark.sql.types import StructType

    from mssql_cdc.options import parse_options
    from mssql_cdc.source.datasource import (
        AdmissionStreamReader,
        MssqlCdcDataSource,
        SnapshotReader,
    )

    raw = {"connectionString": "Server=db;PWD=s3cret", "captureInstance": "dbo_orders"}
    raw["accessToken"] = "t0ken-s3cret"
    source = MssqlCdcDataSource(raw)
    parsed = parse_options(raw)
    readers = [
        AdmissionStreamReader(parsed, StructType(), 1),
        SnapshotReader(parsed, StructType(), 1),
    ]
    for obj in (source, *readers):
        assert "s3cret" not in repr(obj)
        assert "dbo_orders" in repr(obj)


# ---- one run of everything, searched for a recognisable password and access token ----------

PASSWORD = "Pw-SECRET-7f3a9c-Zq!"
TOKEN = "eyJhbGciOi.TOKEN-SECRET-42b1e8.sig"
WRONG_PASSWORD = "Pw-SECRET-wrong-5d2e!"
WRONG_TOKEN = "eyJhbGciOi.TOKEN-SECRET-wrong-77aa.sig"
SECRETS = (PASSWORD, TOKEN, WRONG_PASSWORD, WRONG_TOKEN, "SECRET-7f3a9c", "SECRET-42b1e8")


def _exception_texts(exc: BaseException) -> list[str]:
    """An exception, its causes and contexts, as str, repr and formatted tracebacks."""
    import traceback

    texts = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        texts += [str(current), repr(current), *traceback.format_exception(current)]
        texts += [str(a) for a in getattr(current, "args", ())]
        current = current.__cause__ or current.__context__
    return texts


def _files_text(root) -> list[tuple[str, str]]:
    """Every file under ``root``: its path and its bytes as text (latin-1: any byte)."""
    out = []
    for path in sorted(root.rglob("*")):
        if path.is_file():
            out.append((str(path), path.read_bytes().decode("latin-1")))
    return out


def test_no_secret_anywhere_a_whole_run_leaves(  # noqa: PLR0912, PLR0915 (one run of everything)
    spark, tmp_path, capsys, caplog, monkeypatch
):
    """The main job (bootstrap, then change batches with a password and with an access token),
    a failing login and a failing query (natively and as Spark queries) and the command line,
    with DEBUG logs; then every text they produced is searched for the secrets."""
    import pyarrow as pa

    from _pipeline import Source
    from mssql_cdc import _native
    from mssql_cdc.cli import main
    from mssql_cdc.emulator import Emulator
    from mssql_cdc.source.client import CdcClient

    caplog.set_level(logging.DEBUG, logger="mssql_cdc")
    texts: list[str] = []
    bronze, facts, cp = tmp_path / "bronze", tmp_path / "facts", tmp_path / "cp"
    metrics = tmp_path / "metrics"
    with Emulator(password=PASSWORD) as emu:
        emu.add_access_token(TOKEN, login="sa")
        host = f"tcp:{emu.host},{emu.port}"
        conn = _native.connect(f"Server={host};Encrypt=no", user="sa", password=PASSWORD)
        server = type("S", (), {"host": emu.host, "port": emu.port, "user": "sa"})()
        server.password, server.database = PASSWORD, "master"
        src = Source(conn, server, emu)
        src.sql("CREATE TABLE dbo.orders (id int NOT NULL PRIMARY KEY, name nvarchar(20), qty int)")
        src.sql("EXEC sys.sp_cdc_enable_db")
        src.sql(
            "EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N'orders', "
            "@role_name = NULL"
        )
        src.sql("INSERT INTO dbo.orders VALUES (1, N'one', 1), (2, N'two', 2)")
        src.scan()
        base = f"Server={host};Encrypt=no;TrustServerCertificate=yes"
        by_password = {
            "connectionString": f"{base};UID=sa;PWD={PASSWORD}",
            "captureInstance": "dbo_orders",
            "metricsPath": str(metrics),
        }
        by_token = {
            "connectionString": base,
            "accessToken": TOKEN,
            "captureInstance": "dbo_orders",
            "metricsPath": str(metrics),
        }

        def run(options, **kwargs):
            cdc = stream(spark, options)
            texts.append(repr(cdc))
            query = cdc.to_delta(
                str(bronze),
                app_id="secrets-v1",
                checkpoint=str(cp),
                facts_table=str(facts),
                trigger={"availableNow": True},
                **kwargs,
            )
            try:
                query.awaitTermination()
            except Exception as exc:
                texts.extend(_exception_texts(exc))
            texts.extend([str(query.name), str(query.id), str(query.status)])
            texts.extend([str(query.lastProgress), str(query.recentProgress)])
            query.explain(extended=True)
            return query

        # the main job: bootstrap with the password, then changes read with the token
        run(by_password, bootstrap=True)
        src.workload(10)
        run(by_token)

        # failing logins: natively, through the reader, and as a Spark query
        for kwargs in ({"password": WRONG_PASSWORD, "user": "sa"}, {"access_token": WRONG_TOKEN}):
            try:
                _native.connect(base, **kwargs)
            except Exception as exc:
                texts.extend(_exception_texts(exc))
            else:
                pytest.fail("the login with a wrong secret worked")
        from mssql_cdc.options import parse_options

        for wrong in (
            {**by_password, "connectionString": f"{base};UID=sa;PWD={WRONG_PASSWORD}"},
            {**by_token, "accessToken": WRONG_TOKEN},
        ):
            try:
                CdcClient(parse_options(wrong)).scalar("SELECT 1")
            except Exception as exc:
                texts.extend(_exception_texts(exc))
        try:  # and as a Spark query (one: each costs a query start)
            df = spark.readStream.format("mssql_cdc").options(**wrong).load()
            q = df.writeStream.format("noop").trigger(availableNow=True).start()
            q.awaitTermination()
        except Exception as exc:
            texts.extend(_exception_texts(exc))
        # failing queries: a server error on a connection made with each secret
        for options in (by_password, by_token):
            client = CdcClient(parse_options(options))
            try:
                client.scalar("SELECT 1 / 0")
            except Exception as exc:
                texts.extend(_exception_texts(exc))
            texts.append(repr(client))
            client.close()
        try:
            spark.read.format("mssql_cdc_snapshot").options(
                **{**by_token, "captureInstance": "dbo_missing"}
            ).load().collect()
        except Exception as exc:
            texts.extend(_exception_texts(exc))

        # the command line: the password from the environment, a good run and a failing login
        cli_args = [
            "stream",
            "--server",
            f"{emu.host},{emu.port}",
            "--encrypt",
            "no",
            "--user",
            "sa",
            "--capture-instance",
            "dbo_orders",
            "--target",
            str(tmp_path / "cli_bronze"),
            "--app-id",
            "secrets-cli",
            "--checkpoint",
            str(tmp_path / "cli_cp"),
            "--facts-table",
            str(tmp_path / "cli_facts"),
            "--option",
            f"metricsPath={metrics}",
        ]
        monkeypatch.setenv("MSSQL_CDC_PASSWORD", PASSWORD)
        if main(cli_args) != 0:  # once more if a loaded machine failed the Python worker
            first = capsys.readouterr()
            texts += [first.out, first.err]
            assert "failed to connect back" in first.err
            assert main(cli_args) == 0
        monkeypatch.setenv("MSSQL_CDC_PASSWORD", WRONG_PASSWORD)
        cli_args[cli_args.index("secrets-cli")] = "secrets-cli-2"
        cli_args[cli_args.index(str(tmp_path / "cli_cp"))] = str(tmp_path / "cli_cp2")
        assert main(cli_args) != 0
        assert main(["status", "--facts", str(facts)]) == 0

        # what the tables hold
        for table in (bronze, facts, tmp_path / "cli_bronze", tmp_path / "cli_facts"):
            rows = spark.read.format("delta").load(str(table)).collect()
            assert rows
            texts.append(str(rows))
        assert src.sql("SELECT COUNT(*) AS n FROM dbo.orders")[0]["n"] > 0
        texts.append(str(pa.table(conn.execute("SELECT name FROM dbo.orders")).to_pylist()))
        conn.close()

    captured = capsys.readouterr()
    texts += [captured.out, captured.err, caplog.text]
    files = _files_text(tmp_path)
    for secret in SECRETS:
        for text in texts:
            assert secret not in text, text[:2000]
        for path, text in files:
            assert secret not in text, path
    # what was searched: printed plans, DEBUG logs, checkpoint offsets, metrics files, a login
    # refused with the wrong secret
    assert "== Parsed Logical Plan ==" in captured.out
    assert any(r.levelno == logging.DEBUG for r in caplog.records)
    assert any("/cp/offsets/" in path for path, _ in files)
    assert (metrics / "secrets-v1").is_dir()  # <metricsPath>/<app_id>, searched with the rest
    assert "LoginError: [18456] Login failed for user 'sa'." in captured.err
