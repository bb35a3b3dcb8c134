"""CDC cleanup: the retention-based cleanup job and ``sys.sp_cdc_cleanup_change_table``.

("sys.sp_cdc_cleanup_change_table", Microsoft docs): the job's new low watermark is
``MAX(tran_end_time) - retention`` mapped to an LSN of ``cdc.lsn_time_mapping``; it sets every
capture instance's ``start_lsn`` in one transaction, then deletes change rows below it (at most
``threshold`` rows per statement, default 5000) and the mapping rows below every instance's low
watermark. The mapping uses the last commit at or before the threshold time, and of commits that
share that time the smallest LSN, as ``sp_cdc_cleanup_change_table`` adjusts its
``@low_water_mark`` ("sys.sp_cdc_cleanup_change_table", Microsoft docs) [inferred: the exact
operator of the job is not documented]. Retention is in minutes, default 4320.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import TYPE_CHECKING

from mssql_cdc._native import Lsn
from mssql_cdc.emulator.core.duck import one_row
from mssql_cdc.emulator.core.errors import SqlError
from mssql_cdc.emulator.protocol.temporal import datetime_text, parse_temporal

if TYPE_CHECKING:
    from mssql_cdc.emulator.cdc.state import CaptureInstance, CdcState

__all__ = ["DEFAULT_THRESHOLD", "MAX_RETENTION", "cleanup_change_table", "run_cleanup_job"]

log = logging.getLogger("mssql_cdc.emulator.cdc.cleanup")
DEFAULT_THRESHOLD = 5000
MAX_RETENTION = 52_494_800


def _adjust(state: CdcState, lsn: bytes) -> bytes | None:
    """The smallest mapping LSN sharing the commit time of the entry ``lsn`` (or ``None``)."""
    row = one_row(
        state.db.system.execute(
            'SELECT min(m2.start_lsn) FROM cdc."lsn_time_mapping" m1 '
            'JOIN cdc."lsn_time_mapping" m2 ON m1.tran_end_time = m2.tran_end_time '
            "WHERE m1.start_lsn = ?",
            [lsn],
        )
    )
    return None if row is None or row[0] is None else bytes(row[0])


def _delete_below(state: CdcState, instance: CaptureInstance, threshold: int) -> int:
    cur = state.db.system
    low = bytes(instance.start_lsn)
    deleted = 0
    while True:
        row = one_row(
            cur.execute(
                f'DELETE FROM cdc."{instance.change_table}" WHERE rowid IN (SELECT rowid FROM '
                f'cdc."{instance.change_table}" WHERE "__$start_lsn" < ? LIMIT {int(threshold)})',
                [low],
            )
        )
        count = int(row[0]) if row else 0
        deleted += count
        if count < threshold:
            return deleted


def _trim_mapping(state: CdcState) -> None:
    lows = [bytes(i.start_lsn) for i in state.instances.values()]
    if lows:
        state.db.system.execute(
            'DELETE FROM cdc."lsn_time_mapping" WHERE start_lsn < ?', [min(lows)]
        )


def run_cleanup_job(state: CdcState, retention_minutes: int | None = None) -> int:
    """One run of the cleanup job; returns the change rows deleted."""
    if not state.enabled:
        return 0
    minutes = state.retention_minutes if retention_minutes is None else retention_minutes
    cur = state.db.system
    row = one_row(cur.execute('SELECT max(tran_end_time) FROM cdc."lsn_time_mapping"'))
    if row is None or row[0] is None:
        return 0

    newest = parse_temporal(str(row[0])).to_python()
    assert isinstance(newest, dt.datetime)
    threshold = datetime_text(newest - dt.timedelta(minutes=minutes))
    found = one_row(
        cur.execute(
            'SELECT start_lsn FROM cdc."lsn_time_mapping" WHERE tran_end_time <= ? '
            "ORDER BY tran_end_time DESC, start_lsn ASC LIMIT 1",
            [threshold],
        )
    )
    if found is None:
        return 0
    watermark = _adjust(state, bytes(found[0])) or bytes(found[0])
    for instance in state.instances.values():
        if bytes(instance.start_lsn) < watermark:
            instance.start_lsn = Lsn(watermark)
            state.write_metadata(instance)
    deleted = 0
    for instance in list(state.instances.values()):
        try:
            deleted += _delete_below(state, instance, state.threshold)
        except Exception:  # a failure on one table does not stop the others
            log.exception("cleanup of %s failed", instance.change_table)
    _trim_mapping(state)
    log.info("cleanup: low watermark %s, %d change rows deleted", watermark.hex(), deleted)
    return deleted


def cleanup_change_table(
    state: CdcState, capture_instance: str, low_water_mark: bytes | None, threshold: int | None
) -> int:
    """``sys.sp_cdc_cleanup_change_table``: move one instance's low watermark, delete below it."""
    instance = state.instance(capture_instance)
    if instance is None:
        raise SqlError(
            22964,
            f"The capture instance '{capture_instance}' does not exist in the current database.",
        )
    if low_water_mark is not None:
        adjusted = _adjust(state, low_water_mark)
        if adjusted is None:
            raise SqlError(
                22957,
                f"LSN {low_water_mark.hex()}, specified as the new low endpoint for the change "
                f"table associated with capture instance '{instance.name}', is not within the "
                "Change Data Capture timeline.",
            )
        if bytes(instance.start_lsn) < adjusted:
            instance.start_lsn = Lsn(adjusted)
            state.write_metadata(instance)
    deleted = _delete_below(state, instance, threshold or state.threshold)
    _trim_mapping(state)
    return deleted
