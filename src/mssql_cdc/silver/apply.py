"""``apply_changes``: one call moves a silver table forward from its bronze table with one MERGE
(docs/silver.md).

Order of one call: the arguments are checked; bronze's verdict is read (before bronze, so every
commit it declares complete is in what is read next); the newest complete snapshot and the
change rows beyond silver's position are found; silver is created or given the columns bronze
gained; one MERGE (type 1 or type 2) applies them; then the position and silver's verdict are
written to the control table. A crash between the MERGE and the position write replays the same
rows next call, and the MERGE takes nothing twice (``rules.scd1_merge``, ``scd2``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from mssql_cdc.finalization import retry_conflicts, truncate
from mssql_cdc.silver import plan, rules, scd2, waves
from mssql_cdc.silver.held import loss_check
from mssql_cdc.silver.table import check_silver_kind, ensure_silver, merge
from mssql_cdc.sink import (
    SilverPosition,
    SnapshotEvents,
    StreamTables,
    TargetLedger,
    ensure_control_table,
    merge_silver_position,
    read_silver_positions,
    same_table,
    snapshot_rows_condition,
    table_ref,
)
from mssql_cdc.types import ApplyResult

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from mssql_cdc.silver.source import InstanceInfo
    from mssql_cdc.sink import TableRef

__all__ = ["apply_changes"]

log = logging.getLogger("mssql_cdc.silver")

#: the control table's silver-position writer (``sink.control``); tests replace it
_write_position = merge_silver_position
#: warnings already given, by (kind, table): once per table per process
_warned: set[tuple[str, str]] = set()


def _warn_once(kind: str, table: str, message: str, *args: object) -> None:
    if (kind, table) not in _warned:
        _warned.add((kind, table))
        log.warning(message, *args)


def _warn_without_command_id(columns: Sequence[str], bronze: str, target: str) -> None:
    if "_command_id" not in columns:
        _warn_once(
            "command_id",
            target,
            "bronze %s has no _command_id: changes of one transaction are ordered by "
            "(_seqval, _operation) only",
            bronze,
        )


def _instance_info(options: Mapping[str, str] | None, instance: str) -> InstanceInfo | None:
    if not options:
        return None
    from mssql_cdc.silver.source import instance_info

    return instance_info(options, instance)


def _keys(
    keys: Sequence[str] | None, info: InstanceInfo | None, captured: Sequence[str], instance: str
) -> list[str]:
    if keys is not None:
        return rules.check_keys(keys, captured)
    if info is None:
        raise ValueError(
            "keys is missing: pass keys= (the columns that identify a row), or options so the "
            f"unique index of capture instance {instance!r} is used"
        )
    if not info.index_columns:
        raise ValueError(
            f"capture instance {instance!r} has no unique index; pass keys= (the columns that "
            "identify a row)"
        )
    return rules.check_keys(info.index_columns, captured)


def _check_instances(found: frozenset[str], instance: str, info: InstanceInfo | None) -> None:
    allowed = {instance.lower()} | {i.lower() for i in (info.instances if info else ())}
    other = sorted(found - allowed)
    if not other:
        return
    if info is None:
        raise ValueError(
            f"bronze holds changes of capture instance(s) {', '.join(other)}, not "
            f"{instance!r}: after a capture instance switch pass options= so the table's other "
            "instances are recognised"
        )
    raise ValueError(
        f"bronze holds changes of capture instance(s) {', '.join(other)}, which do not capture "
        f"the table of {instance!r}: one bronze table per source table"
    )


def _refs(
    spark: SparkSession, bronze: str, target: str, control_table: str, facts_table: str | None
) -> tuple[TableRef, TableRef, TableRef, TableRef | None]:
    """The tables of a call, checked: the target is not bronze."""
    bronze_ref = table_ref(bronze, "bronze")
    target_ref = table_ref(target, "target")
    if same_table(spark, bronze_ref, target_ref):
        raise ValueError(f"target {target!r} is the bronze table; give another table")
    facts_ref = table_ref(facts_table, "facts_table") if facts_table else None
    return bronze_ref, target_ref, table_ref(control_table, "control_table"), facts_ref


def _positions(
    spark: SparkSession, control: TableRef, target: TableRef, bronze: TableRef
) -> tuple[SilverPosition | None, SilverPosition | None]:
    """Silver's position and bronze's verdict (the control table created first), in one read
    made before bronze is read: every commit the verdict declares complete is in what the call
    reads next."""
    ensure_control_table(spark, control)
    positions = read_silver_positions(spark, control, target.text, bronze.text)
    return positions.get(target.text), positions.get(bronze.text)


def _snapshots(
    spark: SparkSession,
    bronze: TableRef,
    facts: TableRef | None,
    events: SnapshotEvents | None,
    position: SilverPosition | None,
) -> tuple[plan.Snapshot | None, plan.Snapshot | None, bool]:
    """``(newer, complete, rebuild)``: the newest complete snapshot of bronze newer than the one
    silver rebuilt from (``None``: none; that one's files are skipped), the newest complete
    snapshot (the newer one, else the one silver rebuilt from), and whether the call rebuilds
    silver (its first call, or a newer snapshot)."""
    first = position is None or position.applied_lsn is None
    rebuilt_from = None if first or position is None else position.snapshot_lsn
    snapshot = plan.newest_snapshot(spark, bronze, facts, events, after=rebuilt_from)
    newer = snapshot is not None and (
        position is None or position.snapshot_lsn is None or snapshot.lsn > position.snapshot_lsn
    )
    complete = snapshot or (plan.Snapshot(rebuilt_from, None) if rebuilt_from else None)
    return snapshot, complete, first or newer


def apply_changes(
    spark: SparkSession,
    bronze: str,
    target: str,
    *,
    capture_instance: str | None = None,
    keys: Sequence[str] | None = None,
    control_table: str,
    facts_table: str | None = None,
    options: Mapping[str, str] | None = None,
    granularity: str = "hour",
    scd_type: int = 1,
    track_columns: Sequence[str] | None = None,
) -> ApplyResult:
    """Applies bronze's changes beyond silver's position to silver with one MERGE.

    Args:
        bronze: the bronze table (name or path), as the stream writes it.
        target: the silver table (name or path); created on the first call.
        capture_instance: the capture instance bronze holds; default ``options``'
            ``captureInstance``.
        keys: the columns that identify a row; default the capture instance's unique index
            (needs ``options``).
        control_table: the control table: silver's position and verdict (row ``target``),
            bronze's verdict (row ``bronze``).
        facts_table: the stream's facts table: empty-table snapshots, open snapshots; without
            it silver's verdict does not move.
        options: the source options: the keys and the table's other capture instances are
            read from SQL Server with them.
        granularity: ``"minute"``, ``"hour"`` (default) or ``"day"``: silver's verdict is
            bronze's truncated to it.
        scd_type: 1 (current state, one row per key) or 2 (one row per version).
        track_columns: type 2 only: the columns whose change opens a version (default every
            column); a change to others rewrites the open version.

    Returns:
        :class:`~mssql_cdc.types.ApplyResult`.

    Raises:
        ValueError: a bad argument (named, with the allowed values), no keys, changes of an
            unknown capture instance, or a target of the other SCD type.
        SchemaChangedError: silver cannot take a column bronze gained.
    """
    started = time.monotonic()
    scd = rules.check_scd_type(scd_type)
    truncate(datetime(2000, 1, 1), granularity)  # checks the granularity now
    if track_columns is not None and scd != 2:
        raise ValueError("track_columns applies only to scd_type=2")
    instance = rules.options_instance(capture_instance, options)
    bronze_ref, target_ref, control_ref, facts_ref = _refs(
        spark, bronze, target, control_table, facts_table
    )

    position, bronze_verdict = _positions(spark, control_ref, target_ref, bronze_ref)
    if not bronze_ref.exists(spark):
        log.warning("apply_changes: bronze %s does not exist yet; nothing to apply", bronze)
        return ApplyResult(
            False,
            position.applied_lsn if position else None,
            position.finalized_until if position else None,
            False,
        )
    info = _instance_info(options, instance)
    # the facts' snapshot rows of bronze, read once for the call's three questions
    events = (
        TargetLedger(StreamTables(spark, bronze_ref, facts_ref)).events()
        if facts_ref is not None
        else None
    )
    df = bronze_ref.read(spark)
    captured_fields = [f for f in df.schema.fields if f.name.lower() not in rules.METADATA_NAMES]
    captured = [f.name for f in captured_fields]
    key_columns = _keys(keys, info, captured, instance)
    tracked = rules.check_track_columns(track_columns, scd, captured, key_columns)
    _warn_without_command_id(df.columns, bronze, target_ref.text)

    snapshot, complete, rebuild = _snapshots(spark, bronze_ref, facts_ref, events, position)
    base = snapshot if rebuild else None
    lower = base.lsn if base else (None if rebuild or position is None else position.applied_lsn)
    found = plan.scan(df, lower)
    _check_instances(found.instances, instance, info)
    landed = (
        waves.pending_waves(
            events,
            position=position,
            complete_lsn=complete.lsn if complete else None,
            rebuild=rebuild,
        )
        if events is not None
        else None
    )

    old_applied = position.applied_lsn if position else None
    # the chunks of an open snapshot at S come with every change after S: S is a position
    opened = landed.snapshot_lsn if landed else None
    candidates = [x for x in (found.upper, base.lsn if base else None, old_applied, opened) if x]
    applied = max(candidates) if candidates else None
    counts = (0, 0, 0)
    call = _Call(spark, bronze_ref, target_ref, facts_ref, key_columns, scd)
    if rebuild or found.rows or landed:
        ensure_silver(spark, target_ref, captured_fields, scd)
        rows = _rows(call, df, (lower, applied), base, landed)
        counts = _merge(
            call,
            rows,
            bronze_columns=df.columns,
            captured=captured,
            tracked=tracked,
            base=base,
            rebuild=rebuild,
        )
    else:
        check_silver_kind(spark, target_ref, scd)

    held = position.finalized_until if position else None
    verdict = _verdict(
        call,
        snapshot=complete,
        bronze_row=bronze_verdict,
        held=held,
        granularity=granularity,
        lost_after=loss_check(options, instance) if options else None,
        events=events,
    )
    moves = verdict is not None and (held is None or verdict > held)
    snapshot_lsn = base.lsn if base else (position.snapshot_lsn if position else None)
    open_lsn, wave = _open_position(position, landed, snapshot_lsn)
    if rebuild or applied != old_applied or moves or landed:
        new = SilverPosition(
            target_ref.text,
            applied,
            snapshot_lsn,
            verdict if moves else None,
            end_lsn=bronze_verdict.end_lsn if moves and bronze_verdict else None,
            end_commit_ts=bronze_verdict.end_commit_ts if moves and bronze_verdict else None,
            open_snapshot_lsn=open_lsn,
            snapshot_wave=wave,
        )
        retry_conflicts(
            lambda: _write_position(spark, control_ref, new), f"apply_changes {target} position"
        )
    result = ApplyResult(
        rebuilt=rebuild,
        applied_lsn=applied,
        finalized_until=verdict if moves else held,
        bronze_found=True,
        bronze_rows=found.rows,
        inserted=counts[0],
        updated=counts[1],
        deleted=counts[2],
    )
    log.info(
        "apply_changes %s -> %s (scd_type %d): %s, %d change rows, %d inserted, %d updated, "
        "%d deleted, applied_lsn %s, finalized_until %s, %.1fs",
        bronze,
        target,
        scd,
        _what(base, rebuild, landed),
        found.rows,
        *counts,
        applied,
        result.finalized_until,
        time.monotonic() - started,
    )
    return result


def _what(base: plan.Snapshot | None, rebuild: bool, landed: waves.Waves | None) -> str:
    done = f"rebuilt from snapshot {base.lsn}" if base else ("rebuilt" if rebuild else "applied")
    if landed is None:
        return done
    numbers = [c.number for c in landed.chunks]
    return (
        f"{done} with chunks {numbers[0]}-{numbers[-1]} of the open snapshot {landed.snapshot_lsn}"
    )


def _open_position(
    position: SilverPosition | None, landed: waves.Waves | None, snapshot_lsn: str | None
) -> tuple[str | None, int | None]:
    """The control table's ``(open_snapshot_lsn, snapshot_wave)`` after a call: the chunks it
    applied, else the previous ones while that snapshot is newer than the one silver rebuilt
    from."""
    if landed is not None:
        return landed.snapshot_lsn, landed.last
    if position is None or position.open_snapshot_lsn is None:
        return None, None
    if snapshot_lsn is not None and position.open_snapshot_lsn <= snapshot_lsn:
        return None, None
    return position.open_snapshot_lsn, position.snapshot_wave


@dataclass(frozen=True)
class _Call:
    """One call's fixed parts: the session, bronze, silver (``target``), the facts table, the
    key columns and the SCD type."""

    spark: SparkSession
    bronze: TableRef
    target: TableRef
    facts: TableRef | None
    keys: list[str]
    scd: int


def _rows(
    call: _Call,
    df: DataFrame,
    window: tuple[str | None, str | None],
    base: plan.Snapshot | None,
    landed: waves.Waves | None,
) -> DataFrame:
    """The bronze rows one call applies: the changes in ``window`` (``(lower, upper]``; from
    the lowest stamp of the chunks it applies, when lower), the rebuild's snapshot rows, the
    landed chunks and their range deletes (``silver.waves``)."""
    spark, target, keys, scd = call.spark, call.target, call.keys, call.scd
    lower, upper = window
    if landed is None:
        return plan.changes(df, lower, upper, base)
    if lower is not None and base is None:
        lower = min(lower, landed.first_stamp)
    picked = waves.chunk_rows_condition(df.columns, landed)
    rows = plan.changes(df, lower, upper, base, also=picked)
    key_type = waves.range_key_type(
        keys, landed.keys, {f.name: f.dataType for f in df.schema.fields}
    )
    if key_type is None:
        return rows
    deletes = waves.range_deletes(
        spark,
        target.read(spark),
        df.where(picked),
        landed,
        key=keys[0],
        key_type=key_type,
        scd_type=scd,
    )
    return rows.unionByName(deletes, allowMissingColumns=True)


def _merge(
    call: _Call,
    rows: DataFrame,
    *,
    bronze_columns: list[str],
    captured: list[str],
    tracked: list[str],
    base: plan.Snapshot | None,
    rebuild: bool,
) -> tuple[int, int, int]:
    spark, target, keys, scd = call.spark, call.target, call.keys, call.scd
    what = f"apply_changes {target.text}"
    if scd == 1:
        images = plan.latest_images(rows, keys, captured, bronze_columns)
        columns = rules.silver_columns(captured, 1)
        return merge(
            spark,
            images,
            lambda view: rules.scd1_merge(target.sql, view, keys, columns, rebuild=rebuild),
            what,
        )
    silver = target.read(spark)
    events = plan.transaction_images(rows, keys, captured, bronze_columns)
    if base is not None:
        snapshot_rows = rows.where(snapshot_rows_condition(bronze_columns, base.lsn))
        events = events.unionByName(
            scd2.snapshot_deletes(
                silver,
                snapshot_rows,
                keys,
                columns=captured,
                lsn=base.lsn,
                commit_ts=base.commit_ts,
            )
        )
    versions = scd2.versions(silver, events, keys, captured, tracked)
    columns = rules.silver_columns(captured, 2)
    return merge(
        spark, versions, lambda view: rules.scd2_merge(target.sql, view, keys, columns), what
    )


def _verdict(
    call: _Call,
    *,
    snapshot: plan.Snapshot | None,
    bronze_row: SilverPosition | None,
    held: datetime | None,
    granularity: str,
    lost_after: Callable[[str], bool] | None,
    events: SnapshotEvents | None,
) -> datetime | None:
    """Silver's verdict: bronze's (as read before bronze) truncated to the granularity; none
    without a facts table (warned once), while a snapshot of bronze is open, or when it would
    not move past ``held`` (silver's verdict now: the open-snapshot check is then skipped)."""
    spark, bronze, facts, target = call.spark, call.bronze, call.facts, call.target
    if bronze_row is None or bronze_row.finalized_until is None:
        return None
    verdict = truncate(bronze_row.finalized_until, granularity)
    if held is not None and verdict <= held:
        return None
    if facts is None:
        _warn_once(
            "facts",
            target.text,
            "apply_changes %s: no facts_table, so open snapshots cannot be seen and silver's "
            "verdict is not advanced; pass the stream's facts table",
            target.text,
        )
        return None
    if plan.snapshot_is_open(spark, bronze, facts, snapshot, lost_after, events=events):
        log.info(
            "apply_changes %s: a snapshot of %s is open; verdict held", target.text, bronze.text
        )
        return None
    return verdict
