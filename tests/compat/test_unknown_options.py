"""An unknown option is warned on every ``stream()`` and kept in each run's first micro-batch
facts row (``detail.warnings``), also for a second stream in the same session, whose Python
workers Spark reuses (issue 40, item 4)."""

from __future__ import annotations

import json
import logging

from mssql_cdc import stream
from mssql_cdc.options import parse_options, warn_unknown

TYPO = "maxCommitPerBatch"  # maxCommitsPerBatch, misspelt


def _unknown_warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if "unknown option" in r.getMessage()]


def test_warn_unknown_logs_on_every_call(caplog):
    options = parse_options(
        {"connectionString": "Server=x", "captureInstance": "dbo_t", TYPO: "5", "Foo": "1"}
    )
    assert options.unknown == ("Foo", TYPO)
    with caplog.at_level(logging.WARNING, logger="mssql_cdc.options"):
        warn_unknown(options)
        warn_unknown(options)
        warn_unknown(parse_options({"connectionString": "Server=x", "captureInstance": "dbo_t"}))
    warned = _unknown_warnings(caplog)
    assert len(warned) == 2
    assert warned[0].startswith(f"mssql_cdc ignores unknown option(s) Foo, {TYPO}; known options:")
    assert "maxCommitsPerBatch" in warned[0]


def _first_batch_warnings(spark, facts: str, app_id: str) -> list[str]:
    row = (
        spark.read.format("delta")
        .load(facts)
        .where(f"event IS NULL AND app_id = '{app_id}'")
        .orderBy("batch_id")
        .first()
    )
    assert row is not None
    assert row["batch_id"] == 0
    return json.loads(row["detail"])["warnings"] if row["detail"] else []


def test_each_stream_warns_and_its_first_batch_keeps_the_warning(spark, source, tmp_path, caplog):
    facts = str(tmp_path / "facts")
    source.workload(1)
    for cell in ("one", "two"):  # two notebook cells, one session, the same typo
        with caplog.at_level(logging.WARNING, logger="mssql_cdc"):
            cdc = stream(spark, source.options(**{TYPO: "3"}))
        assert [w for w in _unknown_warnings(caplog) if TYPO in w], cell
        caplog.clear()
        query = cdc.to_delta(
            str(tmp_path / f"bronze-{cell}"),
            app_id=f"orders-{cell}",
            checkpoint=str(tmp_path / f"cp-{cell}"),
            facts_table=facts,
            trigger={"availableNow": True},
        )
        query.awaitTermination()
        warnings = _first_batch_warnings(spark, facts, f"orders-{cell}")
        typo = [w for w in warnings if "unknown option" in w]
        assert len(typo) == 1, (cell, warnings)
        # Spark passes option names lower-cased to the data source
        assert TYPO.lower() in typo[0]
        assert "known options:" in typo[0]
