"""The silver table itself: created from its declaration (``sink.schemas.SILVER`` /
``SILVER_HISTORY``) with bronze's captured columns first, given the columns bronze gains, and
written by one MERGE over a temporary view (ADR 0061). Runs on the driver."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING

from mssql_cdc.errors import SchemaChangedError
from mssql_cdc.finalization import retry_conflicts
from mssql_cdc.sink.ddl import quote_identifier
from mssql_cdc.sink.schemas import SILVER, SILVER_HISTORY
from mssql_cdc.sink.tables import ensure_table

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructField

    from mssql_cdc.sink import TableRef

__all__ = ["MergeCounts", "ensure_silver", "merge"]

log = logging.getLogger("mssql_cdc.silver")

#: ``(inserted, updated, deleted)`` rows of one MERGE, as Delta reports them
MergeCounts = tuple[int, int, int]


def ensure_silver(
    spark: SparkSession, target: TableRef, captured: list[StructField], scd_type: int
) -> None:
    """Creates silver unless it exists; then adds the captured columns it lacks (a column a
    newer capture instance added to bronze; older rows read NULL). A column's type never
    changes here; a silver table of the other SCD type is refused."""
    from pyspark.sql.types import StructType

    kind = SILVER if scd_type == 1 else SILVER_HISTORY
    declared = StructType.fromDDL(kind.ddl)
    assert isinstance(declared, StructType)
    ensure_table(spark, target, kind, StructType([*captured, *declared.fields]))
    have = {c.lower() for c in target.read(spark).columns}
    _refuse_other_kind(target, have, scd_type)
    missing = [f for f in captured if f.name.lower() not in have]
    if not missing:
        return
    added = ", ".join(f"{quote_identifier(f.name)} {f.dataType.simpleString()}" for f in missing)
    try:
        spark.sql(f"ALTER TABLE {target.sql} ADD COLUMNS ({added})")
    except Exception as exc:
        raise SchemaChangedError(
            f"silver {target.text}: could not add the columns bronze gained "
            f"({', '.join(f.name for f in missing)}): {str(exc).splitlines()[0][:300]}"
        ) from exc
    log.info("silver %s: added columns %s", target.text, ", ".join(f.name for f in missing))


def check_silver_kind(spark: SparkSession, target: TableRef, scd_type: int) -> None:
    """Refuses an existing silver table of the other SCD type (a call with nothing to merge
    checks too, so the mistake shows at once). Raises ``ValueError``."""
    if target.exists(spark):
        _refuse_other_kind(target, {c.lower() for c in target.read(spark).columns}, scd_type)


def _refuse_other_kind(target: TableRef, have: set[str], scd_type: int) -> None:
    history = "__end_at" in have
    if history == (scd_type == 2):
        return
    other = SILVER_HISTORY if scd_type == 1 else SILVER
    raise ValueError(
        f"silver {target.text} is a {other.kind} table (scd_type={2 if scd_type == 1 else 1}), "
        f"not scd_type={scd_type}; give another target"
    )


def merge(
    spark: SparkSession, source: DataFrame, statement: Callable[[str], str], what: str
) -> MergeCounts:
    """Runs the MERGE ``statement(view)`` with ``source`` as the temporary view ``view``,
    retrying a lost concurrent commit (``finalization.retry_conflicts``).

    Returns:
        The rows Delta reports inserted, updated and deleted (0 where it reports none).
    """
    view = f"mssql_cdc_silver_{uuid.uuid4().hex}"
    source.createOrReplaceTempView(view)
    try:
        result = retry_conflicts(lambda: spark.sql(statement(view)).first(), what)
    finally:
        spark.catalog.dropTempView(view)
    if result is None:
        return (0, 0, 0)
    values = result.asDict()
    return tuple(  # type: ignore[return-value]
        int(values.get(name) or 0)
        for name in ("num_inserted_rows", "num_updated_rows", "num_deleted_rows")
    )
