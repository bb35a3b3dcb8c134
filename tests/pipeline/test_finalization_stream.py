"""Finalization on real streams (issue 6 proof): the verdict advances after an availableNow run
from the query's last progress, and through ``track`` while a query runs."""

from __future__ import annotations

from mssql_cdc import Lsn, finalization, stream


def test_finalization_advances_after_available_now_and_through_track(spark, source, tmp_path):
    bronze, facts, cp = str(tmp_path / "bronze"), str(tmp_path / "facts"), str(tmp_path / "cp")
    control = str(tmp_path / "control")
    source.workload(1)

    def start(trigger):
        return stream(spark, source.options()).to_delta(
            bronze, app_id="fin-v1", checkpoint=cp, facts_table=facts, trigger=trigger
        )

    query = start({"availableNow": True})
    query.awaitTermination()
    end = finalization.end_offset_from_progress(query.lastProgress)
    assert end is not None
    last_change = source.changes()[-1][0]
    assert Lsn.parse(end["lsn"]) >= Lsn.parse(last_change)  # a commit boundary past it
    verdict = finalization.advance(spark, control, bronze, end, granularity="minute")
    assert verdict == finalization.candidate(end, granularity="minute")
    assert finalization.finalized_until(spark, control, bronze) == verdict
    assert finalization.is_final(spark, control, bronze, verdict)

    # A running query: track advances the verdict after its batches; never backwards.
    source.workload(100)
    query = start({"processingTime": "1 second"})
    listener = finalization.track(spark, query, control, bronze, granularity="minute")
    query.processAllAvailable()
    query.stop()
    listener.finish()
    assert listener.join(timeout=120)
    assert listener.last_error is None
    assert finalization.finalized_until(spark, control, bronze) >= verdict
    # Listener events arrive asynchronously, so the last batch's may come after stop(); tracking
    # the stopped query applies its last progress (what a job does before it exits).
    last = finalization.track(spark, query, control, bronze, granularity="minute")
    assert last.join(timeout=120)
    assert last.last_error is None
    ends = [finalization.end_offset_from_progress(p) for p in query.recentProgress]
    newest = max((e for e in ends if e), key=lambda e: Lsn.parse(e["lsn"]))
    assert Lsn.parse(newest["lsn"]) >= Lsn.parse(source.changes()[-1][0])
    final = finalization.finalized_until(spark, control, bronze)
    assert final == max(verdict, finalization.candidate(newest, granularity="minute"))


def test_a_first_run_that_read_nothing_finalizes_nothing_without_an_error(
    spark, source, tmp_path, caplog
):
    bronze, cp, control = (str(tmp_path / n) for n in ("bronze", "cp", "control"))
    query = stream(spark, source.options()).to_delta(
        bronze, app_id="quiet-v1", checkpoint=cp, trigger={"availableNow": True}
    )
    query.awaitTermination()
    end = finalization.end_offset_from_progress(query.lastProgress)
    assert end is not None
    assert end["commit_ts"] == ""  # a start before the first commit
    with caplog.at_level("INFO", logger="mssql_cdc.finalization"):
        assert finalization.advance(spark, control, bronze, end) is None
    assert "nothing to finalize" in caplog.text
    assert finalization.finalized_until(spark, control, bronze) is None
    assert finalization.candidate(end) is None
    # the tracker takes the same progress quietly
    listener = finalization.track(spark, query, control, bronze)
    assert listener.join(timeout=120)
    assert (listener.last_error, listener.failures) == (None, 0)
