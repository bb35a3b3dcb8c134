"""Holding a micro-batch for the sink's two uses (counting it, then writing it): ``persist()``
where the platform allows it, the batch as it is where it refuses (ADR 0062).

Serverless compute (Databricks serverless, other shared Spark Connect services) refuses
``persist()``/``cache()`` with an error such as ``[NOT_SUPPORTED_WITH_SERVERLESS] PERSIST TABLE
is not supported on serverless compute``. The sink then counts and writes the unpersisted
batch: Spark reads the micro-batch's fixed offset range twice. Both reads see the same change
rows (a CDC range below the batch's end offset does not change), and the reader's metrics files
are kept once per partition range (``mssql_cdc._metrics``), so the facts row is the same; the
cost is the second read from SQL Server. Runs on the driver (or Connect's ``foreachBatch``
worker).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["REFUSALS", "held", "is_refusal"]

log = logging.getLogger("mssql_cdc.sink")

#: words in the error of a platform that does not allow caching
REFUSALS = (
    "NOT_SUPPORTED_WITH_SERVERLESS",
    "PERSIST TABLE is not supported",
    "not supported on serverless",
)

_warned: set[str] = set()  # "persist" once warned


def is_refusal(exc: BaseException) -> bool:
    """True when ``exc`` is a platform's refusal to persist (see :data:`REFUSALS`)."""
    text = str(exc)
    return any(word in text for word in REFUSALS)


@contextmanager
def held(df: DataFrame) -> Iterator[DataFrame]:
    """Yields ``df`` persisted, or ``df`` itself where persisting is refused (logged once per
    process at WARNING); unpersists on exit.

    Raises:
        Exception: any other error of ``persist()``.
    """
    try:
        cached = df.persist()
    except Exception as exc:
        if not is_refusal(exc):
            raise
        if "persist" not in _warned:
            _warned.add("persist")
            log.warning(
                "this Spark refuses persist() (%s): each micro-batch is read twice, once to "
                "count it and once to write it",
                str(exc).splitlines()[0][:200],
            )
        yield df
        return
    try:
        yield cached
    finally:
        try:
            cached.unpersist()
        except Exception as exc:  # a refusal here too must not fail a written batch
            log.debug("unpersist failed: %s", exc)
