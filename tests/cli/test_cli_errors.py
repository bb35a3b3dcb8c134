"""The mssql-cdc command turns Spark-wrapped failures into one line (no JVM trace)."""

from __future__ import annotations

import pytest

from mssql_cdc.cli import _our_error_line, build_parser

SPARK_TEXT = """[PYTHON_DATA_SOURCE_ERROR] Failed when Python Data Source ...
Traceback (most recent call last):
  File "/x/mssql_cdc/source/client.py", line 40, in connect
mssql_cdc.errors.TlsError: TLS handshake failed: the server certificate was not accepted: \
self-signed certificate (set TrustServerCertificate=yes only for a server you trust)
\tat org.apache.spark.sql.execution.python.PythonDataSource...
"""


def test_our_error_is_found_in_a_spark_exception_text():
    assert _our_error_line(SPARK_TEXT) == (
        "TlsError: TLS handshake failed: the server certificate was not accepted: "
        "self-signed certificate (set TrustServerCertificate=yes only for a server you trust)"
    )


def test_value_errors_from_our_code_are_found_too():
    text = "Traceback ...\nValueError: metricsPath 'dbfs:/x': use the FUSE path\n\tat org"
    assert _our_error_line(text) == "ValueError: metricsPath 'dbfs:/x': use the FUSE path"


def test_other_failures_are_left_alone():
    assert _our_error_line("java.lang.OutOfMemoryError: Java heap space") is None


def test_log_level_is_checked_before_anything_runs(capsys):
    with pytest.raises(SystemExit) as info:
        build_parser().parse_args(["--log-level", "LOUD", "status", "--facts", "x"])
    assert info.value.code == 2
    assert "invalid choice: 'LOUD'" in capsys.readouterr().err
    assert build_parser().parse_args(
        ["--log-level", "info", "status", "--facts", "x"]
    ).log_level == ("INFO")


class StreamingQueryException(Exception):  # noqa: N818 (pyspark's name)
    pass


def test_a_wrapped_error_of_ours_is_one_line_from_the_exception_itself(monkeypatch, capsys):
    from mssql_cdc import cli

    wrapper = StreamingQueryException("[STREAM_FAILED] Query terminated with exception")
    wrapper.__context__ = RuntimeError(
        "An error occurred while calling o74.awaitTermination.\n: " + SPARK_TEXT
    )

    def fail(args):
        raise wrapper

    monkeypatch.setattr(cli, "_status", fail)
    assert cli.main(["status", "--facts", "x"]) == 1
    assert capsys.readouterr().err.strip() == (
        "mssql-cdc status: TlsError: TLS handshake failed: the server certificate was not "
        "accepted: self-signed certificate (set TrustServerCertificate=yes only for a server "
        "you trust)"
    )


def test_a_foreign_failure_still_propagates(monkeypatch):
    from mssql_cdc import cli

    def fail(args):
        raise RuntimeError("java.lang.OutOfMemoryError: Java heap space")

    monkeypatch.setattr(cli, "_status", fail)
    with pytest.raises(RuntimeError, match="OutOfMemoryError"):
        cli.main(["status", "--facts", "x"])


#: a stream command line the cases below add one refused value to
STREAM = ["stream", "--server", "db", "--capture-instance", "c", "--target", "/b"]
STREAM += ["--app-id", "a", "--checkpoint", "/cp"]
#: the same for several capture instances, with templates; the cases add the rest
MANY = ["stream", "--server", "db", "--capture-instance", "c", "--capture-instance", "d"]
MANY += ["--target", "/b/{ci}", "--checkpoint", "/cp/{ci}"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["status", "--facts", "x", "--retention-hours", "-5"],
            "--retention-hours must be positive",
        ),
        (["status", "--facts", "x", "--watch", "--json"], "--watch and --json: choose one"),
        (["status", "--facts", "x", "--max-lag-minutes", "-5"], "--max-lag-minutes must be"),
        (["status", "--facts", "x", "--min-headroom-hours", "-1"], "must be zero or more, got -1"),
        (
            ["status", "--facts", "x", "--max-lag-minutes", "0"],
            "--max-lag-minutes must be positive",
        ),
        (
            [
                "stream",
                "--connection-string",
                "Server=db",
                *STREAM[3:],
                "--trust-server-certificate",
            ],
            "--trust-server-certificate goes with --server",
        ),
        (["status", "--facts", "x", "--max-batch-age-minutes", "nan"], "got nan"),
        (["report", "--facts", "x", "--out", "r.txt"], "the extension picks the format"),
        (["report", "--facts", "x", "--out", "r.png", "--hours", "0"], "--hours must be positive"),
        (["demo", "--seconds", "0"], "--seconds must be positive, got 0"),
        (["demo", "--rate", "-1"], "--rate must be positive, got -1"),
        (["status", "--facts", "x", "--retention-hours", "inf"], "must be positive, got inf"),
        (
            ["check", "--server", "db", "--capture-instance", "c", "--schedule-hours", "nan"],
            "--schedule-hours must be positive, got nan",
        ),
        (
            ["check", "--server", "db", "--capture-instance", "c", "--max-capture-latency", "-5"],
            "--max-capture-latency must be positive, got -5",
        ),
        (
            ["check", "--server", "db", "--capture-instance", "c", "--schedule-hours", "-1"],
            "--schedule-hours must be positive",
        ),
        (
            ["check", "--connection-string", "Server=db;PWD=secret", "--capture-instance", "c"],
            "holds a password or token",
        ),
        ([*STREAM, "--option", "numPartitions"], "--option 'numPartitions': expected NAME=VALUE"),
        ([*STREAM, "--option", "=4"], "the NAME is missing"),
        ([*STREAM, "--option", "accessToken=t"], "--option accessToken holds a password"),
        ([*STREAM, "--trigger", "every minute"], "use availableNow, once or processingTime"),
        (
            [*STREAM, "--trigger", "processingTime=banana"],
            "--trigger 'processingTime=banana': processingTime must be an interval Spark reads, "
            "got 'banana': '<number> <unit>' pairs",
        ),
        ([*STREAM, "--trigger", "continuous=1 second"], "continuous processing runs neither"),
        ([*STREAM, "--trigger", "availableNow=true"], "use availableNow, once or processingTime"),
        (
            [*STREAM, "--capture-instance", "d", "--query-name", "q"],
            "--query-name names one query",
        ),
        ([*STREAM, "--capture-instance", "d"], "--target: target '/b' must contain '{ci}'"),
        (
            [*MANY, "--capture-instance", "c", "--app-id", "a"],
            "--app-id: app_id 'a' must contain '{ci}'",
        ),
        ([*MANY, "--capture-instance", "d", "--app-id", "a-{ci}"], "'d' is given twice"),
    ],
)
def test_a_refused_argument_value_exits_2_like_argparse(argv, message, capsys):
    from mssql_cdc import cli

    assert cli.main(argv) == cli.USAGE_EXIT == 2  # before any Spark session starts
    err = capsys.readouterr().err.strip()
    assert "secret" not in err
    assert err.startswith(f"mssql-cdc {argv[0]}: ")
    assert message in err


def test_stream_refuses_its_arguments_before_it_asks_for_the_password(monkeypatch, capsys):
    import io

    from mssql_cdc import cli
    from mssql_cdc.cli import stream_command

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    asked: list[str] = []
    monkeypatch.setattr(stream_command.getpass, "getpass", asked.append)
    monkeypatch.setattr("sys.stdin", Terminal())
    monkeypatch.delenv("MSSQL_CDC_PASSWORD", raising=False)
    assert cli.main([*STREAM, "--user", "u", "--trigger", "every minute"]) == 2
    assert cli.main([*MANY, "--user", "u", "--app-id", "a"]) == 2
    assert asked == []  # no prompt for a command that is refused anyway
    assert "--app-id: app_id 'a' must contain" in capsys.readouterr().err


def test_a_schema_stream_has_its_templates_checked_before_spark(capsys):
    from mssql_cdc import cli

    argv = ["stream", "--server", "db", "--schema", "dbo", "--target", "/b/{ci}"]
    assert cli.main([*argv, "--app-id", "a", "--checkpoint", "/cp/{ci}"]) == 2
    assert "--app-id: app_id 'a' must contain '{ci}'" in capsys.readouterr().err
    # valid templates and no --capture-instance (None with --schema): nothing refused
    import argparse

    from mssql_cdc.cli.stream_command import _check_many

    _check_many(
        argparse.Namespace(
            query_name=None,
            target="/b/{ci}",
            app_id="a-{ci}",
            checkpoint="/cp/{ci}",
            capture_instance=None,
        )
    )


def test_stream_fails_on_an_unreachable_server_before_spark_starts(monkeypatch, capsys):
    from mssql_cdc import cli
    from mssql_cdc import spark as spark_module

    def no_spark(*args, **kwargs):
        raise AssertionError("Spark was started before SQL Server answered")

    monkeypatch.setattr(spark_module, "get_spark", no_spark)
    # the connection is retried as the data source retries it (1 + 3 + 9 s): not waited here
    from mssql_cdc.source.retry import with_retry

    assert with_retry.__kwdefaults__ is not None
    monkeypatch.setitem(with_retry.__kwdefaults__, "delays", (0.0, 0.0, 0.0))
    monkeypatch.setenv("MSSQL_CDC_PASSWORD", "not-the-password")
    argv = ["stream", "--server", "127.0.0.1,1", "--encrypt", "no", "--user", "sa"]
    argv += ["--capture-instance", "c", "--target", "/b", "--app-id", "a", "--checkpoint", "/cp"]
    argv += ["--option", "connectTimeout=5"]
    assert cli.main(argv) == 1  # a failure of the work, in one line
    err = capsys.readouterr().err.strip()
    assert err.startswith("mssql-cdc stream: ConnectionLostError: ")
    assert "127.0.0.1" in err
    assert "\n" not in err
    assert "not-the-password" not in err


@pytest.mark.parametrize("value", ["processingTime=banana", "continuous=1 second"])
def test_a_refused_trigger_is_worded_for_the_command_line(value, capsys):
    from mssql_cdc import cli

    assert cli.main([*STREAM, "--trigger", value]) == 2
    err = capsys.readouterr().err
    # the library's wording shows Python mappings; the command names its own argument
    assert "{" not in err
    assert "allowed:" not in err


@pytest.mark.parametrize(
    ("argv", "usage", "error"),
    [
        (
            ["check", "--server", "db", "--capture-instance", "c", "--trigger", "once"],
            "usage: mssql-cdc check ",
            "mssql-cdc check: error: unrecognized arguments: --trigger once\n",
        ),
        (  # before the subcommand: the top level's
            ["--bogus", "check", "--server", "db", "--capture-instance", "c"],
            "usage: mssql-cdc [-h]",
            "mssql-cdc: error: unrecognized arguments: --bogus\n",
        ),
        (
            ["status", "--facts", "x", "--log-level", "debug"],
            "usage: mssql-cdc status ",
            "unrecognized arguments: --log-level debug (--log-level goes before the subcommand: "
            "mssql-cdc --log-level DEBUG status ...)",
        ),
        (  # the same word before and after: the one after is the one refused
            ["--log-level", "DEBUG", "status", "--facts", "x", "--log-level", "DEBUG"],
            "usage: mssql-cdc status ",
            "mssql-cdc status: error: unrecognized arguments: --log-level DEBUG (--log-level",
        ),
        (  # before and after: the top level's first, naming only its own
            ["--bogus", "status", "--facts", "x", "--other"],
            "usage: mssql-cdc [-h]",
            "mssql-cdc: error: unrecognized arguments: --bogus\n",
        ),
        (
            ["status", "--facts", "x", "--log", "debug"],
            "usage: mssql-cdc status ",
            "--log debug (--log-level goes before the subcommand",
        ),
    ],
)
def test_an_argument_nobody_takes_shows_the_usage_of_where_it_was_given(argv, usage, error, capsys):
    from mssql_cdc import cli

    with pytest.raises(SystemExit) as exit_:
        cli.main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(usage)
    assert error in err


def test_a_zero_headroom_threshold_is_a_threshold():
    # 0 alerts once unread changes may already be deleted: allowed, unlike a negative one
    from mssql_cdc.cli.usage import UsageError, check_non_negative

    check_non_negative("--min-headroom-hours", 0.0)
    check_non_negative("--min-headroom-hours", None)
    for bad in (-0.5, float("nan"), float("inf")):
        with pytest.raises(UsageError, match="--min-headroom-hours must be zero or more"):
            check_non_negative("--min-headroom-hours", bad)


def test_trust_server_certificate_goes_into_the_connection_string():
    from mssql_cdc import cli
    from mssql_cdc.cli.stream_command import options_from

    args = cli.build_parser().parse_args([*STREAM, "--trust-server-certificate", "--encrypt", "no"])
    options = options_from(args, {})
    assert options["connectionString"] == ("Server=tcp:db;Encrypt=no;TrustServerCertificate=yes")
    plain = options_from(cli.build_parser().parse_args(STREAM), {})
    assert plain["connectionString"] == "Server=tcp:db;Encrypt=yes"


@pytest.mark.parametrize(
    ("argv", "env", "hint"),
    [
        (["--user", "sa"], {"MSSQL_CDC_PASSWORD": "x"}, None),  # a wrong password: no hint
        (["--user", "sa"], {}, "(no password was given: MSSQL_CDC_PASSWORD is unset and there"),
        (["--user", "sa"], {"MSSQL_CDC_PASSWORD": ""}, "MSSQL_CDC_PASSWORD is empty and there"),
        ([], {}, "(no --user was given)"),
        (["--user", "sa", "--option", "accessTokenProvider=m:f"], {}, None),  # not a SQL login
    ],
)
def test_a_refused_login_says_what_was_missing(argv, env, hint, monkeypatch, capsys):
    import io

    from mssql_cdc import cli, source
    from mssql_cdc.errors import LoginError

    def refused(options):
        raise LoginError("Login failed for user 'sa'.", number=18456, server="db", line=1)

    monkeypatch.setattr(source, "check_reachable", refused)
    monkeypatch.setattr("sys.stdin", io.StringIO())  # no terminal to prompt on
    monkeypatch.delenv("SPARK_REMOTE", raising=False)
    monkeypatch.delenv("MSSQL_CDC_PASSWORD", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert cli.main([*STREAM, *argv]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("mssql-cdc stream: LoginError: [18456] Login failed for user 'sa'.")
    if hint is None:
        assert "(no " not in err
    else:
        assert hint in err


def test_stream_starts_spark_with_the_stream_logging(monkeypatch):
    from mssql_cdc import cli, source
    from mssql_cdc import spark as spark_module

    configs = []

    class StartedError(Exception):
        pass

    def fake_get_spark(app_name, master="local[*]", *, delta=True, config=None):
        configs.append(config)
        raise StartedError

    monkeypatch.setattr(source, "check_reachable", lambda options: None)
    monkeypatch.setattr(spark_module, "get_spark", fake_get_spark)
    monkeypatch.setattr(spark_module, "stream_run_config", lambda: {"marker": "stream"})
    with pytest.raises(StartedError):
        cli.main(STREAM)
    assert configs == [{"marker": "stream"}]
