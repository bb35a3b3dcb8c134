"""Where the pipeline runs: on Databricks, and on Databricks serverless compute.

Pure Python plus one optional Spark conf read, on the driver, before ``to_delta`` reads or
writes anything (docs/streaming.md, "Triggers" and "Checkpoints"; ADR 0036):

* Databricks sets the environment variable ``DATABRICKS_RUNTIME_VERSION`` in the driver's
  Python process; a session attached to a Databricks cluster from elsewhere carries the Spark
  conf ``spark.databricks.clusterUsageTags.clusterId``. Either means Databricks.
* Serverless compute for notebooks and jobs reports an environment version, not a runtime
  version: ``DATABRICKS_RUNTIME_VERSION`` starts with ``client.`` there (its sessions are Spark
  Connect sessions).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["CLUSTER_ID_CONF", "RUNTIME_VERSION_ENV", "Platform", "detect_platform"]

log = logging.getLogger("mssql_cdc.pipeline")

#: set by Databricks in the driver's environment: ``15.4`` on a cluster, ``client.3.1`` on
#: serverless compute
RUNTIME_VERSION_ENV = "DATABRICKS_RUNTIME_VERSION"
#: a Spark conf every Databricks cluster sets
CLUSTER_ID_CONF = "spark.databricks.clusterUsageTags.clusterId"


@dataclass(frozen=True)
class Platform:
    """What ``to_delta`` needs to know about where it runs."""

    #: Spark resolves a path without a scheme against DBFS, Python against the local disk
    databricks: bool = False
    #: serverless compute: only ``trigger={"availableNow": True}`` runs
    serverless: bool = False


def _cluster_id(spark: SparkSession) -> str | None:
    try:
        value = spark.conf.get(CLUSTER_ID_CONF, None)
    except Exception as exc:  # a session that refuses the read is not a Databricks cluster
        log.debug("could not read %s: %s", CLUSTER_ID_CONF, exc)
        return None
    return value or None


def detect_platform(spark: SparkSession | None, env: Mapping[str, str] | None = None) -> Platform:
    """The :class:`Platform` of ``spark`` in this process (``env`` defaults to
    ``os.environ``)."""
    version = (os.environ if env is None else env).get(RUNTIME_VERSION_ENV, "").strip()
    serverless = version.lower().startswith("client")
    databricks = bool(version) or (spark is not None and _cluster_id(spark) is not None)
    return Platform(databricks=databricks, serverless=serverless)
