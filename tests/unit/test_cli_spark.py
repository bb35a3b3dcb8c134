"""The session the read-only commands (``status``, ``report``) use, without starting Spark: a
local session they build is quiet and set for a short run unless the user's configuration gives
the driver JVM options; an active or Spark Connect session is used as it is."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import mssql_cdc.spark as spark_module
from mssql_cdc.cli import _reading_spark
from mssql_cdc.spark import QUIET_LOG4J2, SHORT_RUN_JAVA_OPTIONS, short_run_config

QUIET = Path(spark_module.__file__).with_name(QUIET_LOG4J2)


class FakeContext:
    def __init__(self) -> None:
        self.levels: list[str] = []

    def setLogLevel(self, level: str) -> None:  # noqa: N802 (Spark's name)
        self.levels.append(level)


class FakeSession:
    def __init__(self) -> None:
        self.sparkContext = FakeContext()


@pytest.fixture
def built(monkeypatch, tmp_path):
    """``get_spark`` replaced: records its calls, returns one fake session; no user config."""
    calls: list[tuple[str, object]] = []
    session = FakeSession()

    def fake_get_spark(app_name, master="local[*]", *, delta=True, config=None):
        calls.append((app_name, config))
        return session

    monkeypatch.setattr(spark_module, "get_spark", fake_get_spark)
    monkeypatch.setattr(SparkSession, "getActiveSession", classmethod(lambda cls: None))
    for name in ("SPARK_REMOTE", "PYSPARK_SUBMIT_ARGS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path / "conf"))
    return calls, session


def test_a_session_the_command_builds_is_quiet_and_set_for_a_short_run(built):
    calls, session = built
    assert _reading_spark("mssql-cdc-status") is session
    assert calls == [
        (
            "mssql-cdc-status",
            {
                "spark.ui.enabled": "false",
                "spark.driver.extraJavaOptions": f"{SHORT_RUN_JAVA_OPTIONS} "
                f"-Dlog4j2.configurationFile={QUIET.as_uri()}",
            },
        )
    ]
    assert session.sparkContext.levels == ["ERROR"]


def test_status_watch_keeps_the_default_jvm(built):
    calls, session = built
    _reading_spark("mssql-cdc-status", short=False)
    assert calls == [("mssql-cdc-status", None)]
    assert session.sparkContext.levels == ["ERROR"]


def test_an_active_or_connect_session_is_left_as_it_is(built, monkeypatch):
    calls, session = built
    monkeypatch.setenv("SPARK_REMOTE", "sc://localhost")
    _reading_spark("mssql-cdc-report")
    monkeypatch.delenv("SPARK_REMOTE")
    monkeypatch.setattr(SparkSession, "getActiveSession", classmethod(lambda cls: session))
    _reading_spark("mssql-cdc-report")
    assert len(calls) == 2  # get_spark returns those sessions as they are
    assert session.sparkContext.levels == []


def test_the_quiet_log4j2_configuration_ships_with_the_module():
    text = QUIET.read_text()
    assert "rootLogger.level = error" in text
    assert "appender.console.target = SYSTEM_ERR" in text


def test_the_users_driver_java_options_are_not_replaced(built, monkeypatch, tmp_path):
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "spark-defaults.conf").write_text(
        "# site settings\nspark.driver.extraJavaOptions  -Dhttps.proxyHost=proxy\n"
    )
    assert short_run_config() == {"spark.ui.enabled": "false"}
    (conf / "spark-defaults.conf").write_text("spark.executor.memory 2g\n")
    assert "spark.driver.extraJavaOptions" in short_run_config()
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", "--driver-java-options -Dx=1 pyspark-shell")
    assert short_run_config() == {"spark.ui.enabled": "false"}


def test_the_stream_session_keeps_sparks_warnings_less_the_ones_every_run_prints(built):
    from mssql_cdc.spark import STREAM_LOG4J2, stream_run_config

    path = Path(spark_module.__file__).with_name(STREAM_LOG4J2)
    assert stream_run_config() == {
        "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={path.as_uri()}"
    }
    text = path.read_text()
    assert "rootLogger.level = warn" in text
    levels = dict(line.split(" = ") for line in text.splitlines() if line.startswith("logger."))
    silenced = {
        levels[key.replace(".level", ".name")]
        for key, level in levels.items()
        if key.endswith(".level") and level == "error"
    }
    assert {
        "org.apache.hadoop.util.NativeCodeLoader",
        "org.apache.spark.sql.execution.streaming.runtime.ResolveWriteToStream",
        "org.apache.spark.util.SparkStringUtils",
        "org.apache.spark.sql.execution.datasources.DataSource",
    } <= silenced
    # a real problem of Spark's still shows: nothing else is turned down
    assert "org.apache.spark" not in silenced


def test_the_users_driver_java_options_are_kept_for_a_stream_too(built, tmp_path):
    from mssql_cdc.spark import stream_run_config

    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "spark-defaults.conf").write_text("spark.driver.extraJavaOptions -Dx=1\n")
    assert stream_run_config() == {}
