"""``mssql-cdc status``: the progress of each open chunked snapshot (docs/monitoring.md,
docs/bootstrap.md#chunked-snapshots-and-backfill): rows done of the estimate, chunks done of
total (``?`` before the first ``backfill()`` call planned them), and the ETA at the pace
measured so far, as ``CdcStream.backfill()`` reports them
(:func:`mssql_cdc.snapshots.backfill.open_progress` computes both); ``--json`` gives every
``BackfillStatus`` field (``snapshot``, ``chunks_total``, ``state``, ...) plus ``done`` and
``paused``."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from mssql_cdc.cli.text import table_text

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from mssql_cdc.types import BackfillStatus

__all__ = ["Progress", "progress_json", "progress_text", "read_progress"]

Progress = tuple[str, str, "BackfillStatus"]


def read_progress(spark: SparkSession, facts_table: str) -> list[Progress]:
    """``(app_id, target, status)`` of every open chunked snapshot in the facts table."""
    from mssql_cdc.sink import table_ref
    from mssql_cdc.snapshots.backfill import open_progress

    return open_progress(spark, table_ref(facts_table, "facts"))


def _eta(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"


def _total(chunks: int | None) -> str:
    return "?" if chunks is None else f"{chunks:,}"


def progress_text(progress: list[Progress]) -> str:
    """A table of open chunked snapshots ("" without any)."""
    if not progress:
        return ""
    rows = [
        (
            app_id,
            target,
            s.snapshot or "",
            f"{s.rows_done:,} of {s.rows_estimated:,}",
            f"{s.chunks_done:,} of {_total(s.chunks_total)}",
            _eta(s.eta_seconds),
            s.reason or "",
        )
        for app_id, target, s in progress
    ]
    header = ("app_id", "target", "snapshot", "rows", "chunks", "eta", "note")
    return "open chunked snapshots:\n" + table_text(header, rows)


def progress_json(progress: list[Progress]) -> list[dict[str, Any]]:
    """The same as JSON-ready dicts."""
    return [
        {"app_id": a, "target": t, **asdict(s), "done": s.done, "paused": s.paused}
        for a, t, s in progress
    ]
