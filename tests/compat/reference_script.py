"""A user's script written only from the reference API's documentation (stream, to_delta,
start_many, await_all, stop_all, apply_changes, reconcile, finalization): results read as
dicts, its import paths. ``run(spark, options, work)`` is the whole job; the test gives it the
emulator's options and a work directory. Nothing here knows this package's own extras."""

from __future__ import annotations

from mssql_cdc import apply_changes, reconcile, stream
from mssql_cdc.fanout import await_all, start_many, stop_all
from mssql_cdc.finalization import advance, end_offset_from_progress, finalized_until
from mssql_cdc.types import Granularity

GRANULARITY: Granularity = "minute"


def run(spark, options: dict[str, str], work: str) -> dict[str, object]:
    facts = f"{work}/facts"
    control = f"{work}/control"
    query = stream(spark, options).to_delta(
        f"{work}/bronze_orders",
        "orders",
        f"{work}/cp_orders",
        facts,
        bootstrap=True,
        trigger={"availableNow": True},
    )
    query.awaitTermination()
    verdict = advance(
        spark, control, f"{work}/bronze_orders", end_offset_from_progress(query.lastProgress)
    )
    applied = apply_changes(
        spark,
        f"{work}/bronze_orders",
        f"{work}/silver_orders",
        capture_instance=options["captureInstance"],
        control_table=control,
        facts_table=facts,
        options=options,
        granularity=GRANULARITY,
    )
    checked = reconcile(
        spark,
        options,
        f"{work}/silver_orders",
        bronze=f"{work}/bronze_orders",
        control_table=control,
        facts_table=facts,
        sample=1.0,
    )
    many = start_many(
        spark,
        options,
        ["dbo_other"],
        target=f"{work}/bronze_{{ci}}",
        app_id="many_{ci}",
        checkpoint=f"{work}/cp_{{ci}}",
        facts_table=facts,
        trigger={"availableNow": True},
    )
    failures = await_all(many)
    stop_all(many)
    return {
        "verdict": verdict,
        "finalized_until": finalized_until(spark, control, f"{work}/bronze_orders"),
        "applied": dict(applied),
        "applied_lsn": applied["applied_lsn"],
        "mismatch": checked["mismatch"],
        "failures": checked["failures"],
        "many": sorted(many),
        "many_failures": failures,
    }
