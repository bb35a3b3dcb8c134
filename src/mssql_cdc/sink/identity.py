"""Which tables a sink may write: the facts table is not the target, and an app_id writes to
one target (ADR 0031).

Runs on the driver, with Spark, before anything is written: in ``to_delta`` before the
bootstrap and the query start, and in the sink on the first batch of a run. Tables are compared
resolved (``tables.same_table``), not as strings.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mssql_cdc.sink.facts_table import recorded_targets
from mssql_cdc.sink.guard import other_target
from mssql_cdc.sink.tables import TableRef, same_table, table_ref

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["check_facts_not_target", "check_one_target"]


def check_facts_not_target(spark: SparkSession | None, target: TableRef, facts: TableRef) -> None:
    """Raises ``ValueError`` when ``facts`` is ``target`` in any spelling (without ``spark``:
    spellings that differ only in a path's form)."""
    if same_table(spark, facts, target):
        raise ValueError(
            f"facts_table {facts.text!r} is the target {target.text!r}: the facts rows would "
            "be appended to bronze; give the facts table its own name or path"
        )


def check_one_target(spark: SparkSession, app_id: str, target: TableRef, facts: TableRef) -> None:
    """Raises ``ValueError`` (naming the app_id, the recorded target and the fix) when the facts
    table records ``app_id`` writing to a table other than ``target``."""
    for text in recorded_targets(spark, facts, app_id):
        try:
            recorded = table_ref(text, "target")
        except ValueError:
            continue
        if not same_table(spark, recorded, target):
            raise other_target(app_id, text, target.text, facts.text)
