"""The chunks of an open chunked snapshot one ``apply_changes`` call applies as they land, and
their range deletes (docs/silver.md, "Chunked snapshots"; ADR 0167).

A chunk is applied once its ``snapshot_chunk`` facts row is recorded. Chunks land in plan
order, so the control table keeps one number per silver table: the last chunk applied
(``snapshot_wave``) of the open snapshot (``open_snapshot_lsn``). A call applies the landed
chunks after it; a rebuild applies every landed chunk (it rewrites silver from what it reads).

Chunk rows are stamped with the LSN L taken before their read, so they rank among the changes
like a change committed at L. A call that applies a chunk also re-reads the changes after the
lowest stamp it applies (already applied ones take nothing twice): a key deleted or changed
after L, even by a change an earlier call applied, keeps its later state.

Range deletes: when silver's key is the snapshot's key and a single integer, ``date`` or
timestamp column, a chunk is the whole of its ``[lo, hi)`` range at its read, so a silver key
in the range the chunk lacks was deleted before the read: it gets a delete at L (type 1 drops
the row, type 2 closes its open version) unless silver holds it from a change at or after L,
or a later change re-inserts it (it outranks the delete). Other keys wait for the snapshot to
complete: the rebuild from the complete snapshot deletes what no chunk holds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import DataType

    from mssql_cdc.sink import SilverPosition, SnapshotEvents

__all__ = [
    "Chunk",
    "Waves",
    "bound_text",
    "chunk_rows_condition",
    "pending_waves",
    "range_deletes",
    "range_key_type",
]

#: the column of the ranges frame naming the chunk a silver key falls in
_CHUNK = "_mssql_cdc_chunk"
_FRACTION = re.compile(r"^(?P<head>.*[T ]\d{2}:\d{2}:\d{2})\.(?P<frac>\d+)$")


@dataclass(frozen=True)
class Chunk:
    """A landed chunk: its number, the stamp L it was read at, its ``[lo, hi)`` bounds (the
    plan's: a list of key values, ``None`` for an open end)."""

    number: int
    stamp: str
    lo: list[Any] | None
    hi: list[Any] | None


@dataclass(frozen=True)
class Waves:
    """The chunks of the open chunked snapshot ``snapshot_lsn`` a call applies, in order, and
    the snapshot's key (the plan's column names)."""

    snapshot_lsn: str
    commit_ts: datetime | None
    chunks: tuple[Chunk, ...]
    keys: tuple[str, ...]

    @property
    def last(self) -> int:
        """The last chunk number applied (the control table's ``snapshot_wave``)."""
        return self.chunks[-1].number

    @property
    def first_stamp(self) -> str:
        """The lowest stamp among the chunks: the changes after it are re-read."""
        return min(c.stamp for c in self.chunks)


def pending_waves(
    events: SnapshotEvents,
    *,
    position: SilverPosition | None,
    complete_lsn: str | None,
    rebuild: bool,
) -> Waves | None:
    """The landed chunks of bronze's newest open chunked snapshot (from bronze's snapshot
    ``events``) that silver has not applied (every landed one on a rebuild); ``None`` when
    there are none, or when the snapshot is not newer than the complete one (``complete_lsn``)
    silver rebuilds from."""
    opened = events.open_chunked()
    if not opened:
        return None
    snap = max(opened, key=lambda s: s.snapshot_lsn)
    floor = max(
        (x for x in (complete_lsn, position.snapshot_lsn if position else None) if x),
        default=None,
    )
    if snap.plan is None or (floor is not None and snap.snapshot_lsn <= floor):
        return None
    done = -1
    if not rebuild and position is not None and position.open_snapshot_lsn == snap.snapshot_lsn:
        done = position.snapshot_wave if position.snapshot_wave is not None else -1
    bounds = snap.plan.get("chunks") or []
    picked: list[Chunk] = []
    number = done + 1
    while number in snap.chunks and number < len(bounds):  # landed in order: a prefix
        lo, hi = bounds[number]
        picked.append(Chunk(number, snap.chunks[number].stamp, lo, hi))
        number += 1
    if not picked:
        return None
    keys = tuple(str(k) for k in snap.plan.get("keys") or ())
    return Waves(snap.snapshot_lsn, snap.commit_ts, tuple(picked), keys)


def chunk_rows_condition(bronze_columns: list[str], waves: Waves) -> Column:
    """Which bronze rows are the chunks ``waves`` applies."""
    from pyspark.sql import functions as sf

    if "_chunk" not in bronze_columns or "_snapshot" not in bronze_columns:
        return sf.lit(False)
    return (
        (sf.col("_operation") == 0)
        & (sf.col("_snapshot") == sf.lit(waves.snapshot_lsn))
        & sf.col("_chunk").isin(*[c.number for c in waves.chunks])
    )


def range_key_type(
    silver_keys: list[str], snapshot_keys: tuple[str, ...], types: dict[str, DataType]
) -> DataType | None:
    """The key's Spark type when range deletes apply: silver's key is the snapshot's key, one
    column of an integer, ``date`` or timestamp-without-time-zone type (``datetime2``,
    ``datetime``, ``smalldatetime``); else ``None``."""
    from pyspark.sql.types import (
        ByteType,
        DateType,
        IntegerType,
        LongType,
        ShortType,
        TimestampNTZType,
    )

    if len(silver_keys) != 1 or [k.lower() for k in snapshot_keys] != [silver_keys[0].lower()]:
        return None
    kind = types.get(silver_keys[0])
    ranged = (ByteType, ShortType, IntegerType, LongType, DateType, TimestampNTZType)
    return kind if isinstance(kind, ranged) else None


def bound_text(value: object, *, lower: bool) -> str | None:
    """A chunk bound as text Spark casts to the key's type, ``None`` for an open end.

    A timestamp bound finer than a microsecond (Spark's unit; silver holds ``datetime2(7)``
    values truncated to it) is moved inside the chunk: a lower bound up to the next
    microsecond, an upper bound down to its microsecond. The keys of that one microsecond may
    belong to the neighbouring chunk, so no chunk deletes them; the complete snapshot's
    rebuild does.
    """
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError(f"a chunk bound of a ranged key cannot be a boolean: {value!r}")
    text = str(value)
    found = _FRACTION.match(text)
    if found is None or len(found["frac"]) <= 6:
        return text
    head, frac = found["head"], found["frac"]
    micro, rest = frac[:6], frac[6:]
    if lower and rest.strip("0"):
        parsed = datetime.fromisoformat(f"{head}.{micro}".replace(" ", "T"))
        from datetime import timedelta

        return (parsed + timedelta(microseconds=1)).isoformat(timespec="microseconds")
    return f"{head}.{micro}"


def range_deletes(
    spark: SparkSession,
    silver: DataFrame,
    chunk_frame: DataFrame,
    waves: Waves,
    *,
    key: str,
    key_type: DataType,
    scd_type: int,
) -> DataFrame:
    """Bronze-shaped delete rows (operation 1 at the chunk's stamp, NULL captured columns but
    the key) for the silver keys inside a chunk's range that the chunk lacks and whose image
    is older than its stamp (type 2: the open versions). ``chunk_frame``: the chunks' bronze
    rows. Union them with the call's rows by name (missing columns NULL)."""
    from pyspark.sql import functions as sf
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    ranges = spark.createDataFrame(
        [
            (
                c.number,
                c.stamp,
                bound_text(_one(c.lo), lower=True),
                bound_text(_one(c.hi), lower=False),
            )
            for c in waves.chunks
        ],
        StructType(
            [
                StructField(_CHUNK, LongType()),
                StructField("stamp", StringType()),
                StructField("lo", StringType()),
                StructField("hi", StringType()),
            ]
        ),
    )
    stamps_ts = chunk_frame.groupBy(sf.col("_chunk").cast("bigint").alias(_CHUNK)).agg(
        sf.max("_commit_ts").alias("stamp_ts")
    )
    ranges = ranges.join(stamps_ts, _CHUNK, "left").withColumn(
        "stamp_ts",
        sf.coalesce(sf.col("stamp_ts"), sf.lit(_text(waves.commit_ts)).cast("timestamp_ntz")),
    )
    quoted = f"`{key.replace('`', '``')}`"
    value = sf.col(f"s.{quoted}")
    lo, hi = sf.col("r.lo").cast(key_type), sf.col("r.hi").cast(key_type)
    inside = (sf.col("r.lo").isNull() | (value >= lo)) & (sf.col("r.hi").isNull() | (value < hi))
    current = silver if scd_type == 1 else silver.where(sf.col("__IS_CURRENT"))
    candidates = (
        current.select(sf.col(quoted).alias(key), "_start_lsn")
        .alias("s")
        .join(
            sf.broadcast(ranges.alias("r")), inside & (sf.col("s._start_lsn") < sf.col("r.stamp"))
        )
        .select(value.alias(key), sf.col("r.stamp").alias("_start_lsn"), sf.col("r.stamp_ts"))
    )
    present = chunk_frame.select(sf.col(quoted).alias(key)).distinct()
    gone = candidates.join(present, key, "left_anti")
    return gone.select(
        sf.col(quoted),
        sf.col("_start_lsn"),
        sf.col("stamp_ts").cast("timestamp_ntz").alias("_commit_ts"),
        sf.lit(1).cast("int").alias("_operation"),
    )


def _one(bound: list[Any] | None) -> object:
    """The single value of a one-column key's bound (``None``: open)."""
    if bound is None:
        return None
    if isinstance(bound, list):
        return bound[0] if bound else None
    return bound


def _text(ts: datetime | None) -> str | None:
    """A naive UTC time as text, so Spark reads it without the session's time zone."""
    return None if ts is None else ts.isoformat()
