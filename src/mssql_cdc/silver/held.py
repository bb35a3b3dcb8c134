"""When an open snapshot holds silver's verdict, and when it stops: the abandoned-snapshot rule
(docs/silver.md, "The verdict"; ADR 0168).

A snapshot of bronze that is open (a ``snapshot_open`` facts row newer than the newest complete
snapshot) holds silver's verdict: silver will be rebuilt from it, which may change periods
already declared complete. An open snapshot that can never complete stops holding it:

* a **full** snapshot at S is abandoned once CDC no longer holds the changes right after S: its
  run died (a live one appends its rows and closes in one go) and no rerun can finish it, since
  a stream can no longer start at S (a rerun takes a new snapshot, which opens its own row);
* a **chunked** snapshot at S is abandoned once the stream that opened it can no longer deliver
  every change after S: CDC no longer holds the changes after that stream's last recorded batch
  end (or after S when it recorded none), so the stream stopped behind the cleanup and its next
  batch fails, skips or re-snapshots (a new open row).

"No longer holds" is the stream's own data-loss rule (``source.retention.find_loss``), asked of
SQL Server on the driver, so it needs ``apply_changes(..., options=)``; without options an open
snapshot holds the verdict until it completes or a newer one supersedes it (warned once).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

__all__ = ["abandoned", "loss_check"]


def abandoned(
    mode: str, snapshot_lsn: str, stream_end: str | None, lost_after: Callable[[str], bool]
) -> bool:
    """Whether an open snapshot at ``snapshot_lsn`` can never complete.

    Args:
        mode: the ``snapshot_open`` row's mode, ``full`` or ``chunked``.
        stream_end: the end LSN of the last batch the opening stream recorded (chunked only;
            ``None``: none since).
        lost_after: whether CDC no longer holds every change after an LSN.
    """
    if mode == "chunked":
        return lost_after(max(snapshot_lsn, stream_end or snapshot_lsn))
    return lost_after(snapshot_lsn)


def loss_check(options: Mapping[str, str], capture_instance: str) -> Callable[[str], bool]:
    """``lost_after`` for :func:`abandoned`: the stream's data-loss rule against the capture
    instance's table, one connection per question (driver)."""
    from mssql_cdc._native import Lsn
    from mssql_cdc.options import parse_options
    from mssql_cdc.source.retention import find_loss

    kept = {k: v for k, v in options.items() if k.lower() != "captureinstance"}
    parsed = parse_options({**kept, "captureInstance": capture_instance})

    def lost_after(lsn: str) -> bool:
        return find_loss(parsed, Lsn.parse(lsn)) is not None

    return lost_after
