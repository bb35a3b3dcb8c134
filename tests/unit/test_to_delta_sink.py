"""The sink ``to_delta`` builds: the facts checks it skips on its first batch (ADR 0179)."""

from __future__ import annotations

from mssql_cdc.options import parse_options
from mssql_cdc.pipeline.cdc_stream import CdcStream
from mssql_cdc.sink import table_ref


def test_only_the_app_id_to_delta_checked_skips_the_sinks_first_check(tmp_path):
    parsed = parse_options({"connectionString": "Server=tcp:h,1", "captureInstance": "dbo_t"})
    cdc = CdcStream(None, {}, parsed)  # type: ignore[arg-type]  # _sink needs no session
    target = table_ref(str(tmp_path / "bronze"), "target")
    facts = table_ref(str(tmp_path / "facts"), "facts_table")

    def skips(sink_id, facts_ref):
        _, sink = cdc._sink(
            {},
            str(tmp_path / "cp"),
            target,
            sink_id,
            facts_ref,
            False,
            warm_state="within_batch",
            checked_app_id="orders",
        )
        return sink._checked

    assert skips("orders", facts) is True
    # a generation's sink writes under another app id, which to_delta did not check
    assert skips("orders.g1", facts) is False
    assert skips("orders", None) is False
