"""The Spark-minor differences the data sources hide (docs/compatibility.md). These run on every
supported PySpark minor (`make test-spark40`, `make test-spark41` and the main suite on 4.2)."""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.types import (
    DecimalType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from mssql_cdc.source.compat import arrow_schema


def test_arrow_schema_is_the_same_on_every_minor():
    # PySpark 4.0/4.1's to_arrow_schema has no `timezone` keyword (4.2 added it): the readers'
    # Arrow schema must not depend on the minor.
    struct = StructType(
        [
            StructField("_commit_ts", TimestampType(), False),
            StructField("at", TimestampNTZType(), True),
            StructField("amount", DecimalType(19, 4), True),
            StructField("name", StringType(), True),
        ]
    )
    assert arrow_schema(struct) == pa.schema(
        [
            pa.field("_commit_ts", pa.timestamp("us", tz="UTC"), False),
            pa.field("at", pa.timestamp("us"), True),
            pa.field("amount", pa.decimal128(19, 4), True),
            pa.field("name", pa.string(), True),
        ]
    )
