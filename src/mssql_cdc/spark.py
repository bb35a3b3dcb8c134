"""Local Spark sessions with Delta Lake, for the demo, the tests and notebooks off-platform.

On a platform (Databricks, EMR, ...) :func:`get_spark` returns the session that is already
running; elsewhere it builds a local one with Delta configured from jars on disk. The jars are
fetched ahead of time with Maven by ``scripts/setup.sh`` (never resolved by Spark's Ivy at run
time, ADR 0003), into ``<sys.prefix>/share/mssql_cdc/jars`` or the directory named by the
``MSSQL_CDC_JARS`` environment variable.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["delta_jars", "get_spark"]

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
            f"no Delta jars in {where}: run scripts/setup.sh (it fetches them with Maven), "
            f"or set {JARS_ENV} to a directory holding delta-spark_<spark>_2.13-<version>.jar "
            "and its dependencies"
        )
    return jars


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
        to that server; otherwise a new local session whose SQL session time zone is UTC.

    Raises:
        FileNotFoundError: ``delta`` is true and no Delta jars are on disk (see
            :func:`delta_jars`).
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
    if delta:
        jars = delta_jars()
        builder = (
            builder.config("spark.jars", ",".join(str(j) for j in jars))
            .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
            .config(
                "spark.sql.catalog.spark_catalog",
                "org.apache.spark.sql.delta.catalog.DeltaCatalog",
            )
        )
    for key, value in (config or {}).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    _log.info(
        "started local Spark %s (%s, delta=%s)", session.version, master, "on" if delta else "off"
    )
    return session
