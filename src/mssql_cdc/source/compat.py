"""What differs between the PySpark minors the data sources run on (4.0, 4.1, 4.2).

Imports PySpark. The stream readers' own difference (admission control from 4.2) is in
:mod:`mssql_cdc.source.datasource` (``HAS_ADMISSION_CONTROL``); docs/compatibility.md lists both.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

__all__ = ["arrow_schema"]

# PySpark 4.2 names the session time zone (keyword-only ``timezone``); 4.0/4.1 take
# ``timestamp_utc: bool`` instead and always mean UTC.
_TAKES_TIMEZONE = "timezone" in inspect.signature(to_arrow_schema).parameters
_to_arrow_schema: Callable[..., pa.Schema] = to_arrow_schema  # typed for 4.2 only


def arrow_schema(schema: StructType) -> pa.Schema:
    """The Arrow schema Spark expects for record batches of ``schema``: ``TIMESTAMP`` as
    ``timestamp[us, tz=UTC]``, ``TIMESTAMP_NTZ`` as ``timestamp[us]``."""
    if _TAKES_TIMEZONE:
        return _to_arrow_schema(schema, timezone="UTC")
    return _to_arrow_schema(schema, timestamp_utc=True)  # pragma: no cover (PySpark 4.0/4.1)
