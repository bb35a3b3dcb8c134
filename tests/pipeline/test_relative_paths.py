"""A stream whose target or facts table is a relative path is refused before anything starts.

Found while building the fault harness (issue 37): ``to_delta("build/x/bronze", ...,
facts_table="build/x/facts")`` failed its first batch (or its bootstrap) with
``AnalysisException: [SCHEMA_NOT_FOUND] The schema `spark_catalog`.`delta` cannot be found``:
the sink creates its tables with ``CREATE TABLE ... delta.`<path>```, which Delta reads as a
path only when it is absolute, and every restart failed the same way. A relative path is also
ambiguous on a cluster (the driver's, each executor's and a Spark Connect server's working
directories differ), so it is refused with the fix."""

from __future__ import annotations

import pytest

from mssql_cdc import stream


@pytest.mark.parametrize(
    ("target", "facts", "named"),
    [("out/bronze", "/abs/facts", "target"), ("/abs/bronze", "out/facts", "facts_table")],
)
def test_a_relative_path_table_is_refused_naming_the_argument(spark, source, target, facts, named):
    with pytest.raises(ValueError, match=f"{named} '[^']+' is a relative path") as info:
        stream(spark, source.options()).to_delta(
            target, app_id="orders-relative", checkpoint="/abs/cp", facts_table=facts
        )
    assert "give an absolute path or a URI" in str(info.value)
