"""The data-loss rule: when changes a reader needs are gone, the message, the WARNING and the
``data_skipped`` event (docs/data-loss.md).

CDC cleanup deletes change rows by age, whatever a reader still needs, and moves each capture
instance's low endpoint (``start_lsn``, what ``sys.fn_cdc_get_min_lsn`` returns) past them.
The rule (:func:`is_gone`): changes from ``first`` are gone when ``first`` is below the low
endpoint. It is exact because no position is ever taken below an instance's start
(:mod:`mssql_cdc.source.positions`): from then on only cleanup (or disabling an older instance)
moves the low endpoint past a position. The stream applies it twice per range: on the driver
before planning (:func:`first_held`, against the table's oldest instance), and in each task
after its read (cleanup ran meanwhile; the change table silently returns what is left).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from mssql_cdc._metrics import metrics_dir
from mssql_cdc._native import Lsn
from mssql_cdc.errors import DataLossError
from mssql_cdc.source.offsets import format_utc

if TYPE_CHECKING:
    from mssql_cdc.source.client import CaptureInstance, CdcClient
    from mssql_cdc.source.clock import ServerClock

__all__ = ["data_loss_error", "first_held", "is_gone", "record_skip"]

log = logging.getLogger("mssql_cdc.source")
_ZERO = Lsn(bytes(10))


def is_gone(first: Lsn, low_endpoint: Lsn) -> bool:
    """Whether changes from ``first`` are gone from an instance whose low endpoint
    (``start_lsn`` / ``sys.fn_cdc_get_min_lsn``) is ``low_endpoint``."""
    return first < low_endpoint


def first_held(
    client: CdcClient,
    clock: ServerClock,
    instances: Sequence[CaptureInstance],
    first: Lsn,
    *,
    lost_from_ts: str,
    fail: bool,
    metrics_path: str | None,
) -> Lsn:
    """The first LSN a batch reads, checked on the driver before planning: ``first``, or the
    oldest of the table's ``instances``' ``start_lsn`` when the changes from ``first`` are gone
    and ``failOnDataLoss=false`` (a WARNING and a ``data_skipped`` event record the skip). An
    instance whose start capture has not set yet (the zero LSN) holds nothing and is left out.

    Raises:
        DataLossError: the changes from ``first`` are gone and ``fail`` is set.
    """
    held = [i for i in instances if i.start_lsn != _ZERO] or list(instances)
    oldest = min(held, key=lambda i: bytes(i.start_lsn))
    if not is_gone(first, oldest.start_lsn):
        return first
    lost_to = client.first_commit_from(oldest.start_lsn)
    lost_to_ts = format_utc(clock.to_utc(lost_to.local_time)) if lost_to else ""
    if fail:
        raise data_loss_error(
            oldest.name, first, oldest.start_lsn, lost_from_ts=lost_from_ts, lost_to_ts=lost_to_ts
        )
    record_skip(
        oldest.name,
        first,
        oldest.start_lsn,
        certain=True,
        metrics_path=metrics_path,
        lost_from_ts=lost_from_ts,
        lost_to_ts=lost_to_ts,
    )
    return oldest.start_lsn


def _range_text(first: Lsn, min_lsn: Lsn, lost_from_ts: str, lost_to_ts: str) -> str:
    times = ""
    if lost_from_ts or lost_to_ts:
        times = f", commits after {lost_from_ts or '?'} up to {lost_to_ts or '?'} (UTC)"
    return f"LSNs {first} to {min_lsn.prev()}{times}"


def data_loss_error(
    capture_instance: str,
    first: Lsn,
    min_lsn: Lsn,
    *,
    lost_from_ts: str = "",
    lost_to_ts: str = "",
) -> DataLossError:
    """The ``DataLossError`` for changes from ``first`` that CDC no longer holds."""
    return DataLossError(
        f"{capture_instance}: change data from {first} is gone (min_lsn is now {min_lsn}): "
        f"purged by CDC cleanup, or held only by a capture instance disabled before the "
        f"stream read it; lost {_range_text(first, min_lsn, lost_from_ts, lost_to_ts)}. "
        "A re-snapshot is required. Set failOnDataLoss=false to skip ahead (loses changes)."
    )


def record_skip(
    capture_instance: str,
    first: Lsn,
    min_lsn: Lsn,
    *,
    certain: bool,
    metrics_path: str | None,
    lost_from_ts: str = "",
    lost_to_ts: str = "",
    reason: str | None = None,
) -> None:
    """Log the WARNING for a skip under ``failOnDataLoss=false`` and write the ``data_skipped``
    event file when ``metrics_path`` is set (never fails the read)."""
    log.warning(
        "%s: failOnDataLoss=false: skipping %s that CDC no longer holds (%s)",
        capture_instance,
        _range_text(first, min_lsn, lost_from_ts, lost_to_ts),
        "found before planning" if certain else "found by a task after its read",
    )
    if not metrics_path:
        return
    payload: dict[str, object] = {
        "from": str(first),
        "to": str(min_lsn.prev()),
        "certain": certain,
        "capture_instance": capture_instance,
        # the facts row's min_lsn = max_lsn: where the stream resumed (docs/sink.md#the-facts-table)
        "lsn": str(min_lsn),
    }
    if lost_from_ts:
        payload["lost_from_ts"] = lost_from_ts
    if lost_to_ts:
        payload["lost_to_ts"] = lost_to_ts
    if reason is not None:
        payload["reason"] = reason
    try:
        metrics_dir(metrics_path).write_event("data_skipped", f"{first}-{min_lsn}", payload)
    except ValueError as exc:
        log.warning("could not write the data_skipped event: %s", exc)
