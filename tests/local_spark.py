"""The configuration of every local Spark session the tests start, in one place: the suite's
own session (conftest.py), the Spark Connect server (connect_server.py) and the crash, chaos
and backfill jobs that run in their own processes (pipeline/_crash_job.py,
snapshots/_backfill_job.py).

``MSSQL_CDC_TEST_MASTER`` chooses their Spark master (default ``local[2]``): ``make test-cluster``
runs a subset on ``local-cluster[2,1,1024]``, where two executors run in JVMs of their own, each
with its own Python workers and working directory, as on a cluster (docs/development.md)."""

from __future__ import annotations

import os

#: the environment variable that names the tests' Spark master
MASTER_ENV = "MSSQL_CDC_TEST_MASTER"


def master() -> str:
    """The Spark master of the tests' sessions: ``MSSQL_CDC_TEST_MASTER``, else ``local[2]``."""
    return os.environ.get(MASTER_ENV) or "local[2]"


#: The driver JVM compiles with C1 only. The tests run many short jobs on tiny tables, where the
#: C2 compiler's threads take the cores from the work itself. Measured on the 2-core CI machine
#: under load (a session start, then a Delta table created, six appends with txnAppId and a
#: count): 17-30 s start and 55-66 s of work with C1 only, against 27-62 s and 118-143 s by
#: default. Not for production sessions, whose long runs gain from C2.
#: C1 alone gets a 48 MB code cache, which a session running the whole suite fills and flushes
#: (seen at 47 MB after a dozen tables and MERGEs): 256 MB keeps what is compiled.
JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=256m"


def spark_config(
    warehouse: str | None = None, extra: dict[str, str] | None = None
) -> dict[str, str]:
    """Spark settings for a local test session; ``warehouse``: its SQL warehouse (and Derby's
    home, so parallel sessions never share a metastore); ``extra`` wins."""
    java = JVM_OPTIONS
    config = {
        "spark.ui.enabled": "false",
        # one task per shuffle, and per Delta state rebuild (50 by default: a rebuild per
        # commit with txnAppId and per MERGE), and no adaptive re-planning of each stage: the
        # tests' tables hold a few files each. Measured on the micro workload above plus four
        # MERGEs, one run after the other: 48-50 s of work against 57-61 s with 2, 2 and AQE.
        "spark.sql.shuffle.partitions": "1",
        "spark.databricks.delta.snapshotPartitions": "1",
        "spark.sql.adaptive.enabled": "false",
    }
    if warehouse is not None:
        config["spark.sql.warehouse.dir"] = warehouse
        java += f" -Dderby.system.home={warehouse}"
    config["spark.driver.extraJavaOptions"] = java
    config.update(extra or {})
    return config
