"""The ``mssql_cdc`` change source read into Spark's ``noop`` sink: every row read into the JVM,
nothing written. The benchmarks that measure the read path alone start it here."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def start_noop(spark: Any, options: dict[str, str], checkpoint: Path) -> Any:
    """Starts an ``availableNow`` query of the ``mssql_cdc`` source (registered on ``spark``
    by the caller: ``mssql_cdc.source.register``) into the ``noop`` sink, checkpointed at
    ``checkpoint``; returns the ``StreamingQuery``."""
    return (
        spark.readStream.format("mssql_cdc")
        .options(**options)
        .load()
        .writeStream.format("noop")
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
