"""``--facts`` of ``mssql-cdc status`` and ``report``: refused as a bad argument (one line,
exit 2, :class:`~mssql_cdc.cli.usage.UsageError`) when it names a table that is not a facts
table, rather than failing inside Spark with an ``AnalysisException`` traceback. Runs on the
driver; reads the table's schema only, through the sink (``sink.missing_facts_columns``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mssql_cdc.cli.usage import UsageError
from mssql_cdc.sink import missing_facts_columns

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["NEEDED_COLUMNS", "require_facts_table"]

#: the facts columns every facts table has had since its first version, which status and
#: report read (docs/sink.md, "The facts table")
NEEDED_COLUMNS = ("app_id", "batch_id", "rows", "event", "target", "written_at")


def require_facts_table(spark: SparkSession, facts: str) -> None:
    """Checks that ``facts`` (the ``--facts`` argument) is a facts table when it exists (a
    missing one is left to the command, which says so).

    Raises:
        UsageError: the table lacks facts columns; the message names the argument, the
            table and the columns missing.
    """
    missing = missing_facts_columns(spark, facts, "--facts", NEEDED_COLUMNS)
    if missing:
        raise UsageError(
            f"--facts {facts!r} is not a facts table: it has no column {', '.join(missing)} "
            "(a facts table is the one to_delta(facts_table=...) writes; docs/sink.md)"
        )
