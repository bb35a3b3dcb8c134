"""``CdcStream.seed()``: a copy of the table the user already has becomes its snapshot in
bronze, for a table too big to read within the CDC retention (docs/bootstrap.md#seed; ADR
0103).

Runs on the driver, in the calling Python process: the copy's position (``as_of``: an LSN
recorded before the copy was read, or the time the read started, mapped to the last commit at
or before it) is checked against what CDC holds, the copy's columns are matched to the
stream's schema (by name ignoring case, cast to the captured types; extra columns dropped), and
the rows are appended in one commit as operation 0 stamped with that position. With a facts
table the ``bootstrap`` row is written (same idempotency key as a bootstrap), so
``to_delta(bootstrap=True)`` starts from the seed and reads nothing.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mssql_cdc._native import Lsn
from mssql_cdc.errors import DataLossError
from mssql_cdc.sink import Bootstrapped, utc_now
from mssql_cdc.snapshots.full import offset_of
from mssql_cdc.source import SnapshotPosition
from mssql_cdc.types import Offset

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import StructField

    from mssql_cdc.sink import Ledger
    from mssql_cdc.snapshots.reader import TableReader

__all__ = ["SeedCopy", "seed", "seed_as_of"]

log = logging.getLogger("mssql_cdc.snapshots")

_METADATA = frozenset(
    {"_capture_instance", "_start_lsn", "_seqval", "_operation", "_command_id", "_commit_ts"}
)


def seed_as_of(as_of: object) -> dt.datetime | Lsn:
    """``as_of`` checked: a ``datetime`` (naive = UTC), an ``Lsn``, or LSN text ``0x...``.

    Raises:
        TypeError: another type.
        ValueError: text that is not an LSN.
    """
    if isinstance(as_of, (dt.datetime, Lsn)):
        return as_of
    if isinstance(as_of, str):
        try:
            return Lsn.parse(as_of.strip())
        except ValueError as exc:
            raise ValueError(
                f"as_of {as_of!r} is not an LSN ('0x' and 20 hex digits, as SELECT "
                "CONVERT(varchar(22), sys.fn_cdc_get_max_lsn(), 1) returns); pass a datetime "
                "for the time the copy was read"
            ) from exc
    raise TypeError(
        "as_of must be a datetime (when the copy started being read) or an LSN "
        f"(recorded before it), got {type(as_of).__name__}"
    )


def _column(
    field: StructField, copy: dict[str, str], ci: str, position: SnapshotPosition
) -> Column:
    from pyspark.sql import functions as sf

    name = field.name
    if name == "_capture_instance":
        value: Column = sf.lit(ci)
    elif name == "_start_lsn":
        value = sf.lit(str(position.lsn))
    elif name == "_operation":
        value = sf.lit(0)
    elif name == "_commit_ts":
        ts = position.commit_ts
        value = sf.lit(None if ts is None else ts.isoformat(sep=" "))
    elif name in _METADATA or name.lower() not in copy:
        value = sf.lit(None)
    else:
        value = sf.col(f"`{copy[name.lower()]}`")
    return value.cast(field.dataType).alias(name)


@dataclass(frozen=True)
class SeedCopy:
    """``seed()``'s copy and how to take it: the rows, their position (``as_of``, checked by
    :func:`seed_as_of`), whether captured columns it lacks are seeded as NULL, and whether it
    may replace the target's snapshot."""

    df: DataFrame
    as_of: dt.datetime | Lsn
    allow_missing_columns: bool = False
    reseed: bool = False


def _frame(reader: TableReader, copy: SeedCopy, position: SnapshotPosition) -> DataFrame:
    schema = reader.schema()
    df = copy.df
    by_name = {c.lower(): c for c in df.columns}
    missing = [
        f.name for f in schema.fields if f.name not in _METADATA and f.name.lower() not in by_name
    ]
    if missing and not copy.allow_missing_columns:
        raise ValueError(
            f"The copy lacks captured columns {', '.join(missing)}: pass "
            "allow_missing_columns=True to seed them as NULL"
        )
    ci = reader.capture_instance
    return df.select(*[_column(f, by_name, ci, position) for f in schema.fields])


def seed(reader: TableReader, ledger: Ledger, copy: SeedCopy) -> Offset:
    """Appends ``copy`` to bronze as its snapshot (see the module doc); ``ledger``'s app_id
    ``None``: a seed for no stream (no ``bootstrap`` row).

    Raises:
        DataLossError: no commit at or before the ``as_of`` time, or the changes after the
            copy's position are purged.
        ValueError: an ``as_of`` LSN not recorded yet; the copy lacks a captured column (and
            ``allow_missing_columns`` is false); the target holds another snapshot (and
            ``reseed`` is false, or the copy is not newer than it); ``reseed`` with an
            ``app_id`` whose bootstrap row the facts already hold.
    """
    target = ledger.target
    position = reader.seed_position(copy.as_of)
    lsn = str(position.lsn)
    existing = ledger.whole_snapshot()
    if existing is not None and existing[0] == lsn:
        log.info("seed of %s at %s: already in %s; reading nothing", target.text, lsn, target.text)
        _record(ledger, lsn)
        return offset_of(lsn, position.commit_ts)
    if existing is not None and not copy.reseed:
        raise ValueError(
            f"target {target.text!r} already holds a snapshot of the table (at {existing[0]}): "
            "to replace it with this copy pass reseed=True (then start a new checkpoint with a "
            "new app_id)"
        )
    if existing is not None and lsn <= existing[0]:
        raise ValueError(
            f"reseed=True: the copy's position {lsn} is not newer than the snapshot at "
            f"{existing[0]} already in {target.text!r}; seed from a newer copy"
        )
    facts = ledger.tables.facts
    if existing is not None and ledger.app_id is not None:
        earlier = ledger.bootstrap_lsn()
        if earlier is not None and facts is not None:
            # its bootstrap row is written once per app_id: the new seed would go unrecorded
            raise ValueError(
                f"reseed=True: app_id {ledger.app_id!r} already recorded its bootstrap at "
                f"{earlier} in {facts.text!r}; give the reseed a new app_id (and its stream a "
                "new checkpoint)"
            )
    loss = reader.loss_after(position.lsn)
    if loss is not None:
        raise DataLossError(
            f"{loss.error()} The copy (as of {lsn}) is older than the CDC retention. Seed "
            "from a newer copy"
        )
    ci = reader.capture_instance
    log.info("seed of %s into %s started: copy as of %s", ci, target.text, lsn)
    started_at, clock = utc_now(), time.monotonic()
    commit = ledger.snapshot_commit("seed")
    ledger.append_snapshot(commit, _frame(reader, copy, position), lsn, ci)
    duration_ms = round((time.monotonic() - clock) * 1000)
    rows = _record(ledger, lsn, started_at, duration_ms)
    log.info(
        "seed of %s done: %d rows as of %s appended to %s in %.1f s",
        ci,
        rows,
        lsn,
        target.text,
        duration_ms / 1000,
    )
    return offset_of(lsn, position.commit_ts)


def _record(
    ledger: Ledger,
    lsn: str,
    started_at: dt.datetime | None = None,
    duration_ms: int | None = None,
) -> int:
    """Writes the seed's ``bootstrap`` facts row once (with facts and an app_id)."""
    rows, commit_ts = ledger.snapshot_rows(lsn)
    if ledger.tables.facts is not None and ledger.app_id is not None:
        ledger.close(Bootstrapped(lsn, commit_ts, rows, started_at, duration_ms))
    return rows
