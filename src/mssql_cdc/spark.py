"""Local Spark sessions with Delta Lake, for the demo, the tests and notebooks off-platform.

On a platform (Databricks, EMR, ...) :func:`get_spark` returns the session that is already
running; elsewhere it builds a local one with Delta configured. In a checkout the jars are on
disk: ``scripts/setup.sh`` fetches them with Maven into ``<sys.prefix>/share/mssql_cdc/jars``
(ADR 0003), or ``MSSQL_CDC_JARS`` names a directory holding them. After a plain
``pip install 'mssql-cdc[spark]'`` there is no such directory, so Spark resolves from Maven
Central, when the session starts, the Delta jar published for the installed delta-spark and
pyspark (``spark.jars.packages``, ADR 0045; :mod:`mssql_cdc.delta_jars` picks the jar, ADR 0191).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from mssql_cdc.delta_jars import DeltaJar, delta_jar
from mssql_cdc.errors import DeltaJarsError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["SNAPSHOT_PARTITIONS", "delta_jars", "delta_package", "get_spark"]

_log = logging.getLogger("mssql_cdc.spark")

JARS_ENV = "MSSQL_CDC_JARS"


def delta_jars() -> list[Path]:
    """Return the Delta jars local Spark is started with.

    Looks in the directory named by ``MSSQL_CDC_JARS``, else in
    ``<sys.prefix>/share/mssql_cdc/jars`` (where ``scripts/setup.sh`` puts them).

    Raises:
        FileNotFoundError: no directory holds a ``delta-spark_*.jar``; the message says how to
            fetch them.
    """
    configured = os.environ.get(JARS_ENV)
    directory = Path(configured) if configured else Path(sys.prefix) / "share/mssql_cdc/jars"
    jars = sorted(directory.glob("*.jar"))
    if not any(j.name.startswith("delta-spark_") for j in jars):
        where = f"{JARS_ENV}={configured}" if configured else str(directory)
        raise FileNotFoundError(
            f"no Delta jars in {where}: put delta-spark_<spark>_2.13-<delta>.jar and "
            f"delta-storage-<delta>.jar there (mssql_cdc.delta_jars.delta_jar() names the pair "
            f"for the installed pyspark and delta-spark), or unset {JARS_ENV} to have Spark "
            "fetch them from Maven Central; in a checkout, scripts/setup.sh fetches them"
        )
    return jars


def delta_package(delta_version: str | None = None, spark_version: str | None = None) -> str:
    """Return the Maven coordinate of the published Delta jar for a Delta and a Spark version.

    Args:
        delta_version: the delta-spark release; default: the installed ``delta-spark``.
        spark_version: the Spark release; default: the installed ``pyspark``.

    Returns:
        ``io.delta:delta-spark_<spark major.minor>_2.13:<delta>`` for Delta 4.1 and later, which
        publish one artifact per Spark minor version; ``io.delta:delta-spark_2.13:<delta>``
        for Delta 4.0 (built for Spark 4.0 only). A delta-spark patch release whose jar is not
        on Maven Central gets the newest published jar of its Delta minor (delta-spark 4.4.1 on
        Spark 4.2: ``io.delta:delta-spark_4.2_2.13:4.4.0``; :func:`mssql_cdc.delta_jars.delta_jar`).

    Raises:
        DeltaJarsError: no jar of that Delta minor is published for that Spark minor.
        ModuleNotFoundError: a version is not given and its package is not installed; the
            message names the extra to install.
    """
    return delta_jar(delta_version, spark_version).coordinate


def _delta_classpath() -> tuple[str, str, DeltaJar | None]:
    """The Spark setting that puts Delta on the class path: ``("spark.jars", paths, None)``
    when the jars are on disk, else ``("spark.jars.packages", coordinate, jar)``. A
    ``MSSQL_CDC_JARS`` that holds no Delta jar is an error, not a fallback: the user named that
    directory."""
    try:
        return "spark.jars", ",".join(str(j) for j in delta_jars()), None
    except FileNotFoundError:
        if os.environ.get(JARS_ENV):
            raise
    jar = delta_jar()
    _log.info(
        "no Delta jars in %s: Spark resolves %s from Maven Central (spark.jars.packages)",
        Path(sys.prefix) / "share/mssql_cdc/jars",
        jar.coordinate,
    )
    return "spark.jars.packages", jar.coordinate, jar


def _unresolved(jar: DeltaJar, exc: Exception) -> DeltaJarsError:
    """The error for a local session that did not start while Spark resolved ``jar``."""
    spark_jar, storage_jar = jar.files
    return DeltaJarsError(
        f"local Spark did not start: its JVM exited while resolving the Delta jar "
        f"{jar.coordinate} (spark.jars.packages, for delta-spark {jar.delta_version} and "
        f"pyspark {jar.spark_version}). Spark's messages above say why: 'UNRESOLVED "
        f"DEPENDENCIES' when no repository serves it (Maven Central, or those of "
        f"spark.jars.repositories); 'FAILED DOWNLOADS' often when ~/.m2/repository, which "
        f"Spark also reads, holds a pom without its jar (delete that artifact's directory "
        f"there). To use jars on disk instead, put {spark_jar} and {storage_jar} in a "
        f"directory and set {JARS_ENV} to it ({exc})"
    )


#: ``spark.databricks.delta.snapshotPartitions`` of the local sessions :func:`get_spark` builds
SNAPSHOT_PARTITIONS = 4

#: ``spark.driver.extraJavaOptions`` for a local session that runs a few short jobs and ends
#: (the ``demo``, ``status`` and ``report`` commands): the JVM compiles with C1 only, whose quick
#: start roughly halves such a run on a small machine (a long-running stream or ``status
#: --watch`` gains from C2, so :func:`get_spark` does not set it by default). C1 alone gets a
#: 48 MB code cache, which a longer demo fills and flushes: 256 MB keeps what is compiled.
SHORT_RUN_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=256m"


def _user_sets_driver_java_options() -> bool:
    """True when the user's Spark configuration gives the driver JVM options: a
    ``spark.driver.extraJavaOptions`` line in ``spark-defaults.conf`` (``SPARK_CONF_DIR``, else
    ``$SPARK_HOME/conf``, else PySpark's own ``conf``) or ``PYSPARK_SUBMIT_ARGS`` naming them."""
    submit = os.environ.get("PYSPARK_SUBMIT_ARGS", "")
    if "extraJavaOptions" in submit or "--driver-java-options" in submit:
        return True
    conf_dir = os.environ.get("SPARK_CONF_DIR")
    if not conf_dir:
        home = os.environ.get("SPARK_HOME")
        if not home:
            import pyspark

            home = str(Path(pyspark.__file__).parent)
        conf_dir = str(Path(home) / "conf")
    try:
        lines = (Path(conf_dir) / "spark-defaults.conf").read_text(errors="replace").splitlines()
    except OSError:
        return False
    return any(line.strip().startswith("spark.driver.extraJavaOptions") for line in lines)


#: the driver's Log4j 2 configuration in a :func:`short_run_config` session (next to this
#: module): errors only, so Spark's start-up warnings stay out of a command's output
QUIET_LOG4J2 = "log4j2-quiet.properties"
#: the driver's Log4j 2 configuration in a :func:`stream_run_config` session (next to this
#: module): Spark's warnings, less those every streaming run prints that no one can act on
STREAM_LOG4J2 = "log4j2-stream.properties"


def _driver_log4j2(name: str) -> str:
    """The JVM option that reads the Log4j 2 configuration ``name`` next to this module, empty
    when the file is missing."""
    path = Path(__file__).with_name(name)
    return f"-Dlog4j2.configurationFile={path.as_uri()}" if path.is_file() else ""


def short_run_config() -> dict[str, str]:
    """Settings for a local session that runs a few short jobs and ends (``config`` of
    :func:`get_spark`): no Spark UI and, unless the user's Spark configuration gives the driver
    JVM options (which a setting here would replace), :data:`SHORT_RUN_JAVA_OPTIONS` and the
    Log4j 2 configuration :data:`QUIET_LOG4J2`."""
    config = {"spark.ui.enabled": "false"}
    if not _user_sets_driver_java_options():
        options = f"{SHORT_RUN_JAVA_OPTIONS} {_driver_log4j2(QUIET_LOG4J2)}".strip()
        config["spark.driver.extraJavaOptions"] = options
    return config


def stream_run_config() -> dict[str, str]:
    """Settings for the local session of a long-running stream (``mssql-cdc stream``): unless
    the user's Spark configuration gives the driver JVM options, the Log4j 2 configuration
    :data:`STREAM_LOG4J2`; the JVM and the Spark UI as Spark sets them."""
    if _user_sets_driver_java_options():
        return {}
    options = _driver_log4j2(STREAM_LOG4J2)
    return {"spark.driver.extraJavaOptions": options} if options else {}


def get_spark(
    app_name: str = "mssql-cdc",
    master: str = "local[*]",
    *,
    delta: bool = True,
    config: Mapping[str, str] | None = None,
) -> SparkSession:
    """Return the active Spark session, or build a local one with Delta configured.

    Args:
        app_name: ``spark.app.name`` of a new session.
        master: Spark master of a new session, e.g. ``"local[2]"``.
        delta: configure Delta Lake (SQL extension, catalog and jars) in a new session.
        config: more Spark settings for a new session (ignored when one is active).

    Returns:
        The active session if there is one; with ``SPARK_REMOTE`` set, a Spark Connect session
        to that server; otherwise a new local session whose SQL session time zone is UTC and,
        with Delta, whose table state is rebuilt in :data:`SNAPSHOT_PARTITIONS` partitions. Its
        Delta jars come from disk (:func:`delta_jars`) or, when there are none, from Maven
        Central through ``spark.jars.packages`` (:func:`delta_package`).

    Raises:
        FileNotFoundError: ``delta`` is true and ``MSSQL_CDC_JARS`` names a directory without
            the Delta jars.
        ModuleNotFoundError: ``delta`` is true, no jars are on disk and delta-spark is not
            installed.
        DeltaJarsError: ``delta`` is true, no jars are on disk, and no Delta jar is published
            for the installed pyspark and delta-spark, or Spark could not resolve it (the
            message names the coordinate and the jars to put in ``MSSQL_CDC_JARS``).
    """
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    remote = os.environ.get("SPARK_REMOTE")
    if remote:
        _log.info("connecting to Spark Connect at %s", remote)
        return SparkSession.builder.remote(remote).appName(app_name).getOrCreate()

    # Python workers run the interpreter that runs the driver (the project's venv).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.appName(app_name)
        .master(master)
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.ui.showConsoleProgress", "false")
    )
    resolved: DeltaJar | None = None  # the jar Spark resolves at start-up, if any
    if delta:
        key, value, resolved = _delta_classpath()
        builder = (
            builder.config(key, value)
            .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
            .config(
                "spark.sql.catalog.spark_catalog",
                "org.apache.spark.sql.delta.catalog.DeltaCatalog",
            )
            # Delta rebuilds a table's state from its log before every commit that carries a
            # transaction id (each sink commit), in this many tasks per stage; the default of
            # 50 is sized for tables of millions of files (docs/performance.md)
            .config("spark.databricks.delta.snapshotPartitions", str(SNAPSHOT_PARTITIONS))
        )
    for key, value in (config or {}).items():
        builder = builder.config(key, value)
    try:
        session = builder.getOrCreate()
    except Exception as exc:
        # PySpark's error when the JVM exits before it starts, as spark-submit does when a
        # package of spark.jars.packages does not resolve
        if resolved is None or "JAVA_GATEWAY_EXITED" not in str(exc):
            raise
        raise _unresolved(resolved, exc) from exc
    _log.info(
        "started local Spark %s (%s, delta=%s)", session.version, master, "on" if delta else "off"
    )
    return session
