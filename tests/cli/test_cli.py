"""The ``mssql-cdc`` command through ``main(argv)``: the demo end to end (with ``status`` on
its facts table), and the ``stream`` command's arguments. ``stream`` runs against the emulator
in tests/pipeline/test_to_delta.py."""

from __future__ import annotations

import io
import re

import pytest

from mssql_cdc.cli import build_parser, main
from mssql_cdc.cli.invocation import command
from mssql_cdc.cli.stream_command import options_from, parse_trigger


def test_demo_streams_the_live_workload_exactly_and_status_reads_its_facts(spark, tmp_path, capsys):
    assert main(["demo", "--seconds", "6", "--rate", "10", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "check: every bronze table holds exactly its change history, each change once" in out
    assert "CHECK FAILED" not in out
    assert re.search(r"workload: \d+ transactions committed", out)
    # the closing hint names a command that exists here (mssql_cdc.cli.invocation)
    assert f"\n  {command()} status --facts {tmp_path / 'facts'} --retention-hours " in out
    tables = ("Sales_Customer", "Person_EmailAddress", "Production_Product")
    for ci in tables:
        assert (tmp_path / "bronze" / ci / "_delta_log").is_dir()
    total = spark.read.format("delta").load(str(tmp_path / "facts")).where("event IS NULL")
    sums = total.groupBy("app_id").sum("rows").toDF("app_id", "n").collect()
    rows = {r["app_id"]: r["n"] for r in sums}
    assert set(rows) == {f"demo-{ci}" for ci in tables}
    assert sum(rows.values()) > 0
    # the last progress line (printed once every stream caught up) counts what bronze holds
    last = [line for line in out.splitlines() if re.match(r"\[\s*\d+\.\ds\] ", line)][-1]
    shown = dict(re.findall(r"(\w+\.\w+) ([\d,]+) rows in \d+ bronze commit", last))
    assert {
        f"demo-{table.replace('.', '_')}": int(n.replace(",", "")) for table, n in shown.items()
    } == rows

    assert main(["status", "--facts", str(tmp_path / "facts")]) == 0
    status = capsys.readouterr().out
    lines = {
        line.split()[0]: line.split() for line in status.splitlines() if line.startswith("demo-")
    }
    assert set(lines) == set(rows)
    for app_id, cells in lines.items():
        assert int(cells[3].replace(",", "")) == rows[app_id]  # rows column


def test_status_of_a_missing_facts_table_is_one_line(spark, tmp_path, capsys):
    assert main(["status", "--facts", str(tmp_path / "nothing")]) == 1
    assert capsys.readouterr().err.strip() == (
        f"mssql-cdc status: facts table '{tmp_path / 'nothing'}' does not exist"
    )


def stream_args(*extra):
    return build_parser().parse_args(
        [
            "stream",
            "--capture-instance",
            "dbo_orders",
            "--target",
            "/b",
            "--app-id",
            "a",
            "--checkpoint",
            "/cp",
            *extra,
        ]
    )


def test_stream_takes_the_password_from_the_environment_never_argv():
    args = stream_args(
        "--server",
        "db,1433",
        "--database",
        "sales",
        "--user",
        "u",
        "--option",
        "maxCommitsPerBatch=10",
    )
    options = options_from(args, {"MSSQL_CDC_PASSWORD": "s3cret"}, io.StringIO())
    assert options == {
        "connectionString": "Server=tcp:db,1433;Encrypt=yes;Database=sales",
        "captureInstance": "dbo_orders",
        "user": "u",
        "password": "s3cret",
        "maxCommitsPerBatch": "10",
    }
    args = stream_args("--connection-string", "Server=db;PWD=s3cret", "--user", "u")
    with pytest.raises(ValueError, match="holds a password or token") as info:
        options_from(args, {}, io.StringIO())
    assert "s3cret" not in str(info.value)
    with pytest.raises(ValueError, match="--option Password holds a password or token"):
        options_from(stream_args("--server", "db", "--option", "Password=x"), {}, io.StringIO())
    assert "password" not in options_from(stream_args("--server", "db"), {}, io.StringIO())


def test_stream_triggers():
    assert parse_trigger("availableNow") == {"availableNow": True}
    assert parse_trigger("processingTime=1 minute") == {"processingTime": "1 minute"}
    with pytest.raises(ValueError, match="use availableNow, once"):
        parse_trigger("every minute")


def test_no_secret_is_taken_from_argv():
    env = {"MSSQL_CDC_PASSWORD": "from-env"}
    secret_strings = [
        "Server=db;UID=u;PWD=s3cret",
        "Server=db;uid=u; password = s3cret ;Encrypt=yes",
        "Server=db;PWD={s3;cret}",
        "Server=db;AccessToken=s3cret",
    ]
    for text in secret_strings:
        for argv in (
            ("--connection-string", text),
            ("--server", "db", "--option", f"connectionString={text}"),
        ):
            with pytest.raises(ValueError, match="holds a password or token") as info:
                options_from(stream_args(*argv), env, io.StringIO())
            message = str(info.value)
            assert "s3cret" not in message
            assert "MSSQL_CDC_PASSWORD environment variable" in message
    for name in ("password", "Password", "PWD", "accessToken", "ACCESSTOKEN"):
        with pytest.raises(ValueError, match=rf"--option {name} holds a password or token"):
            options_from(
                stream_args("--server", "db", "--option", f"{name}=s3cret"), env, io.StringIO()
            )
    with pytest.raises(ValueError, match="is not a connection string") as info:
        options_from(
            stream_args("--connection-string", "Server=db;PWD={s3cret"), env, io.StringIO()
        )
    assert "s3cret" not in str(info.value)
    # a connection string without a secret is taken, with the password from the environment
    args = stream_args("--server", "db", "--option", "connectionString=Server=db2;UID=u")
    options = options_from(args, env, io.StringIO())
    assert options["connectionString"] == "Server=db2;UID=u"
    assert options["password"] == "from-env"


def test_the_stream_command_refuses_continuous_and_bad_intervals(capsys):
    for trigger, message in [
        ("continuous=1 second", "continuous processing runs neither foreachBatch"),
        ("processingTime=banana", "processingTime must be an interval Spark reads"),
    ]:
        argv = ["stream", "--server", "db", "--capture-instance", "c", "--target", "/b"]
        argv += ["--app-id", "a", "--checkpoint", "/cp", "--trigger", trigger]
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"mssql-cdc stream: --trigger '{trigger}': ")
        assert message in err
    assert (
        "serverless" in build_parser()._subparsers._group_actions[0].choices["stream"].format_help()
    )
