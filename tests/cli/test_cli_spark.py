"""The session the read-only commands (``status``, ``report``) use, without starting Spark: a
local session they build is quiet and set for a short run unless the user's configuration gives
the driver JVM options; an active or Spark Connect session is used as it is."""

from __future__ import annotations

import re
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


def _stream_loggers() -> dict[str, dict[str, str]]:
    """The packaged stream configuration's loggers: id -> their settings (``name``, ``level``,
    ``filter...``)."""
    from mssql_cdc.spark import STREAM_LOG4J2

    loggers: dict[str, dict[str, str]] = {}
    for line in Path(spark_module.__file__).with_name(STREAM_LOG4J2).read_text().splitlines():
        if line.startswith("logger."):
            key, value = line.split(" = ", 1)
            _, ident, setting = key.split(".", 2)
            loggers.setdefault(ident, {})[setting] = value
    return loggers


#: what the stream's configuration turns down, by Spark minor where the class moved
STREAM_SILENCED = {
    "org.apache.hadoop.util.NativeCodeLoader",
    "org.apache.spark.sql.execution.streaming.ResolveWriteToStream",  # 4.0
    "org.apache.spark.sql.execution.streaming.runtime.ResolveWriteToStream",  # 4.1, 4.2
    "org.apache.spark.sql.catalyst.util.SparkStringUtils",  # 4.0
    "org.apache.spark.util.SparkStringUtils",  # 4.1, 4.2
}
#: what Spark's own default configuration turns down, kept in ours
SPARK_DEFAULTS = {
    "org.sparkproject.jetty.util.component.AbstractLifeCycle",
    "org.apache.hadoop.hive.metastore.RetryingHMSHandler",
    "org.apache.hadoop.hive.metastore.ObjectStore",
    "org.apache.parquet.CorruptStatistics",
    "parquet.CorruptStatistics",
}


def test_the_stream_session_keeps_sparks_warnings_less_the_ones_every_run_prints(built):
    from mssql_cdc.spark import STREAM_LOG4J2, stream_run_config

    path = Path(spark_module.__file__).with_name(STREAM_LOG4J2)
    assert stream_run_config() == {
        "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={path.as_uri()}"
    }
    assert "rootLogger.level = warn" in path.read_text()
    loggers = _stream_loggers()
    quiet = {s["name"] for s in loggers.values() if s.get("level") in ("error", "fatal")}
    assert quiet == STREAM_SILENCED | SPARK_DEFAULTS  # nothing else is turned down
    # DataSource keeps its warnings but the one about a listed _delta_log
    (listing,) = (s for s in loggers.values() if s["name"].endswith(".DataSource"))
    assert "level" not in listing
    regex = re.compile(listing["filter.deltalog.regex"].replace("\\\\", "\\"))
    assert listing["filter.deltalog.onMatch"] == "DENY"
    assert regex.fullmatch("All paths were ignored:\n  file:/tmp/t/_delta_log\n")
    assert not regex.fullmatch("All paths were ignored:\n  file:/data/landing")
    assert not regex.fullmatch("Multiple sources found for delta, defaulting to the internal one")


def test_the_loggers_turned_down_name_classes_of_the_installed_spark():
    import zipfile

    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    classes = set()
    for jar in jars.glob("*.jar"):
        with zipfile.ZipFile(jar) as z:
            classes.update(n[: -len(".class")].replace("/", ".") for n in z.namelist())
    names = {s["name"] for s in _stream_loggers().values()}
    spark_ones = {n for n in STREAM_SILENCED if n.startswith("org.apache.spark")}
    # each class is under one of its two names in any one minor
    present = spark_ones & classes
    assert {n.rsplit(".", 1)[1] for n in present} == {"ResolveWriteToStream", "SparkStringUtils"}
    assert "org.apache.hadoop.util.NativeCodeLoader" in classes
    assert "org.apache.spark.sql.execution.datasources.DataSource" in classes & names


def test_the_users_driver_java_options_are_kept_for_a_stream_too(built, tmp_path):
    from mssql_cdc.spark import stream_run_config

    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "spark-defaults.conf").write_text("spark.driver.extraJavaOptions -Dx=1\n")
    assert stream_run_config() == {}
