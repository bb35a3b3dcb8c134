"""The proof of issue 40: a script written only from the reference API's documentation runs
unchanged against the emulator with local Spark (tests/compat/reference_script.py)."""

from __future__ import annotations

import reference_script


def test_a_script_written_for_the_reference_api_runs_unchanged(spark, source, tmp_path):
    source.workload(1)
    source.sql("INSERT INTO dbo.other VALUES (1, N'x')")
    source.scan()
    out = reference_script.run(spark, source.options(), str(tmp_path))
    assert out["applied"]["bronze_found"] is True
    assert out["applied_lsn"] == out["applied"]["applied_lsn"]
    assert out["applied_lsn"] is not None
    assert out["mismatch"] == 0
    assert out["failures"] == {}
    assert out["many"] == ["dbo_other"]
    assert out["many_failures"] == {}
    assert out["finalized_until"] == out["verdict"]
    rows = source.table()
    assert rows  # the workload left rows the silver table holds
