"""Shared pytest fixtures.

* ``spark``: one local Spark session (``local[2]``, Delta, UTC) for the whole run. Tests that
  use it get the ``spark`` marker automatically, so ``pytest -m "not spark"`` runs without a JVM.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSession]:
    pytest.importorskip("pyspark")
    from mssql_cdc.spark import get_spark

    warehouse: Path = tmp_path_factory.mktemp("spark-warehouse")
    session = get_spark(
        "mssql-cdc-tests",
        "local[2]",
        config={
            "spark.sql.warehouse.dir": str(warehouse),
            "spark.driver.extraJavaOptions": f"-Dderby.system.home={warehouse}",
            "spark.ui.enabled": "false",
            "spark.sql.shuffle.partitions": "2",
        },
    )
    yield session
    session.stop()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.spark)
