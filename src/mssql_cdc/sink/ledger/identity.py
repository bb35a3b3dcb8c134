"""Which tables a sink may write: the facts table is not the target, and an app_id writes to
one target (ADR 0031).

Runs on the driver, with Spark, before anything is written: in ``to_delta`` before the
bootstrap and the query start, and in the sink on the first batch of a run. Tables are compared
resolved (``tables.same_table``), not as strings.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mssql_cdc.sink.ledger.landed import recorded_targets
from mssql_cdc.sink.ledger.rewind import other_target
from mssql_cdc.sink.tables import TableRef, same_table, table_ref

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "check_facts_not_target",
    "check_one_target",
    "sink_arguments",
]


def sink_arguments(
    target: str, app_id: str, facts_table: str | None
) -> tuple[TableRef, str, TableRef | None]:
    """The one check of a sink's identity arguments, shared by ``delta_sink`` and
    ``CdcStream.to_delta``: ``(target, app_id, facts table or None)``, the tables parsed.

    Raises:
        TypeError: ``app_id`` is not a string, or a table is not a string.
        ValueError: ``app_id`` or a table is empty, a table is malformed, or ``facts_table`` is
            ``target`` in a spelling told apart without Spark.
    """
    if not isinstance(app_id, str):
        raise TypeError(f"app_id must be a str, got {type(app_id).__name__}")
    if not app_id.strip():
        raise ValueError("app_id is empty; give the sink a stable name such as 'orders-v1'")
    target_ref = table_ref(target, "target")
    facts_ref = None if facts_table is None else table_ref(facts_table, "facts_table")
    if facts_ref is not None:
        check_facts_not_target(None, target_ref, facts_ref)
    return target_ref, app_id, facts_ref


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
    for text in recorded_targets(spark, facts, app_id, other_than=target.text):
        try:
            recorded = table_ref(text, "target")
        except ValueError:
            continue
        if not same_table(spark, recorded, target):
            raise other_target(app_id, text, target.text, facts.text)
