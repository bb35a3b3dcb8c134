"""The sink ``to_delta`` builds: the facts checks it skips on its first batch (ADR 0179)."""

from __future__ import annotations

from mssql_cdc.options import parse_options
from mssql_cdc.pipeline.arguments import Recovery
from mssql_cdc.pipeline.start import StreamStart
from mssql_cdc.pipeline.start_plan import StartPlan
from mssql_cdc.sink import Generation, table_ref


def test_only_the_app_id_to_delta_checked_skips_the_sinks_first_check(tmp_path):
    parsed = parse_options({"connectionString": "Server=tcp:h,1", "captureInstance": "dbo_t"})
    target = table_ref(str(tmp_path / "bronze"), "target")
    facts = table_ref(str(tmp_path / "facts"), "facts_table")
    checkpoint = str(tmp_path / "cp")

    def skips(sink_id, facts_ref):
        plan = StartPlan(
            target,
            "orders",
            facts_ref,
            checkpoint,
            None,
            {"availableNow": True},
            bootstrap=False,
            chunked=False,
            recovery=Recovery(resnapshot=False, interval_days=7.0),
            options={},
            metrics_base=None,
        )
        start = StreamStart(None, plan, parsed)  # type: ignore[arg-type]  # _sink needs no session
        number = 0 if sink_id == "orders" else 1
        _, sink = start._sink(Generation(number, sink_id, checkpoint, None))
        assert sink._warm_state == "within_batch"
        return sink._checked

    assert skips("orders", facts) is True
    # a generation's sink writes under another app id, which to_delta did not check
    assert skips("orders.g1", facts) is False
    assert skips("orders", None) is False
