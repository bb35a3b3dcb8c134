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
:func:`find_loss` asks the same question before a query starts (a re-snapshot's pre-flight, a
bootstrap deciding whether another stream's snapshot is still a start, a seed's ``as_of``).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mssql_cdc._metrics import metrics_dir
from mssql_cdc._native import Lsn
from mssql_cdc.errors import DataLossError
from mssql_cdc.options import ReaderOptions
from mssql_cdc.source.catalog import find_instance
from mssql_cdc.source.client import CdcClient
from mssql_cdc.source.offsets import format_utc
from mssql_cdc.source.retry import with_retry
from mssql_cdc.source.run_warnings import AS_EVENT

if TYPE_CHECKING:
    from mssql_cdc.source.client import CaptureInstance
    from mssql_cdc.source.clock import ServerClock

__all__ = [
    "Loss",
    "Skip",
    "data_loss_error",
    "find_loss",
    "first_held",
    "held_instances",
    "is_gone",
    "record_skip",
]

log = logging.getLogger("mssql_cdc.source")
_ZERO = Lsn(bytes(10))


def is_gone(first: Lsn, low_endpoint: Lsn) -> bool:
    """Whether changes from ``first`` are gone from an instance whose low endpoint
    (``start_lsn`` / ``sys.fn_cdc_get_min_lsn``) is ``low_endpoint``."""
    return first < low_endpoint


def held_instances(instances: Sequence[CaptureInstance]) -> list[CaptureInstance]:
    """The instances that bound what a table holds: those whose start capture has set (an
    instance at the zero LSN holds nothing yet), or all of them when none has."""
    return [i for i in instances if i.start_lsn != _ZERO] or list(instances)


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
    oldest = min(held_instances(instances), key=lambda i: bytes(i.start_lsn))
    if not is_gone(first, oldest.start_lsn):
        return first
    lost_to = client.first_commit_from(oldest.start_lsn)
    lost_to_ts = format_utc(clock.to_utc(lost_to.local_time)) if lost_to else ""
    if fail:
        raise data_loss_error(
            oldest.name, first, oldest.start_lsn, lost_from_ts=lost_from_ts, lost_to_ts=lost_to_ts
        )
    record_skip(
        Skip(
            oldest.name,
            first,
            oldest.start_lsn,
            certain=True,
            lost_from_ts=lost_from_ts,
            lost_to_ts=lost_to_ts,
        ),
        metrics_path,
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
    """The ``DataLossError`` for changes from ``first`` that CDC no longer holds, worded for
    both readers of changes: a stream, and a batch read of one LSN range (``endingLsn``)."""
    return DataLossError(
        f"{capture_instance}: change data from {first} is gone (min_lsn is now {min_lsn}): "
        f"purged by CDC cleanup, or held only by a capture instance disabled before this read "
        f"reached them; lost {_range_text(first, min_lsn, lost_from_ts, lost_to_ts)}. "
        'A stream into bronze needs a re-snapshot (to_delta(on_data_loss="resnapshot")); a '
        "batch read can start at startingLsn=earliest. Set failOnDataLoss=false to skip "
        "ahead (loses changes)."
    )


@dataclass(frozen=True)
class Skip:
    """A range skipped under ``failOnDataLoss=false``: the changes of ``capture_instance`` from
    ``first`` up to ``min_lsn`` (its low endpoint now), whether the driver found it before
    planning (``certain``) or a task after its read, the lost commit times when known (ISO-8601
    UTC, ``""``: unknown) and why."""

    capture_instance: str
    first: Lsn
    min_lsn: Lsn
    certain: bool
    lost_from_ts: str = ""
    lost_to_ts: str = ""
    reason: str | None = None


def record_skip(skip: Skip, metrics_path: str | None) -> None:
    """Log the WARNING for a skip under ``failOnDataLoss=false`` and write the ``data_skipped``
    event file when ``metrics_path`` is set (never fails the read)."""
    capture_instance, first, min_lsn, certain = (
        skip.capture_instance,
        skip.first,
        skip.min_lsn,
        skip.certain,
    )
    lost_from_ts, lost_to_ts, reason = skip.lost_from_ts, skip.lost_to_ts, skip.reason
    log.warning(
        "%s: failOnDataLoss=false: skipping %s that CDC no longer holds (%s)",
        capture_instance,
        _range_text(first, min_lsn, lost_from_ts, lost_to_ts),
        "found before planning" if certain else "found by a task after its read",
        extra=AS_EVENT,
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


@dataclass(frozen=True)
class Loss:
    """Changes a reader starting after ``after`` would need but CDC no longer holds: the
    oldest capture instance of the table, its low endpoint ``min_lsn``, the commit time (UTC)
    of the oldest change still held (``lost_to_ts``, ``None`` when none is) and the commit
    time of ``after`` itself (``after_ts``, ``None`` when no commit has that LSN)."""

    capture_instance: str
    after: Lsn
    min_lsn: Lsn
    lost_to_ts: dt.datetime | None
    after_ts: dt.datetime | None = None

    def error(self, lost_from_ts: str = "") -> DataLossError:
        """The stream's own :func:`data_loss_error` for this loss."""
        return data_loss_error(
            self.capture_instance,
            self.after.next(),
            self.min_lsn,
            lost_from_ts=lost_from_ts or format_utc(self.after_ts),
            lost_to_ts=format_utc(self.lost_to_ts),
        )


def _loss(client: CdcClient, after: Lsn) -> Loss | None:
    newest = client.max_commit()
    if newest is None or newest.lsn <= after:
        return None  # nothing captured after it: the stream would plan no batch
    _, siblings = find_instance(client)
    held = [i for i in siblings if i.start_lsn != _ZERO]
    if not held:
        return None
    oldest = min(held, key=lambda i: bytes(i.start_lsn))
    if not is_gone(after.next(), oldest.start_lsn):
        return None
    first = client.first_commit_from(oldest.start_lsn)
    lost_to = client.server_clock().to_utc(first.local_time) if first is not None else None
    return Loss(oldest.name, after, oldest.start_lsn, lost_to, client.commit_time(after))


def find_loss(options: ReaderOptions, after: Lsn) -> Loss | None:
    """Whether a stream that has processed ``after`` would stop with ``DataLossError`` on its
    next batch: CDC captured a commit after it and the changes from the next LSN are gone from
    the table's oldest instance (the rule of :func:`first_held`). Runs in the calling Python
    process (the driver), before a query starts.

    Raises:
        ValueError, PermissionError, SqlServerError: from the source.
    """
    client = CdcClient(options)
    try:
        return with_retry(client, "data-loss check", lambda: _loss(client, after))
    finally:
        client.close()
