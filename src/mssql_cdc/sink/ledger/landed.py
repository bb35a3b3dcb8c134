"""What already landed, read back from the tables: Delta's recorded transaction versions,
the facts rows that record commits, and bronze's snapshot rows and history (the evidence a
rerun after a crash decides from).

Runs on the driver (``last_batch`` and the transaction versions also in Spark Connect's
``foreachBatch`` worker), one Spark job or log read per question. Every function takes the
session and the tables (``TableRef``) and reads nothing else; the ledger (``ledger.Ledger``,
``ledger.TargetLedger``) binds them and is the only caller.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from mssql_cdc.sink.ledger import ids
from mssql_cdc.sink.tables import TableRef, same_table, table_ref
from mssql_cdc.sink.txn_ids import recorded_txn_version

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, Row, SparkSession

__all__ = [
    "LastBatch",
    "Member",
    "ParkedTable",
    "TableBatch",
    "WaveCommit",
    "bootstrap_lsn",
    "chunk_rows",
    "database_members",
    "database_parked",
    "find_snapshot",
    "last_batch",
    "last_batches",
    "newest_headroom",
    "newest_wave",
    "newest_whole_snapshot",
    "recorded_targets",
    "recorded_targets_of",
    "snapshot_rows",
    "snapshot_txn_version",
    "txn_version",
]

# -- Delta's transaction ids -----------------------------------------------------------------


def txn_version(spark: SparkSession, ref: TableRef, app_id: str) -> int:
    """The last ``txnVersion`` Delta recorded for the ``txnAppId`` ``app_id`` on the table;
    ``-1`` when the table does not exist or holds none for it. Read through Delta's JVM classes
    where they are reachable, else from the ``_delta_log`` files through Spark
    (``sink.txn_ids``, ADR 0060)."""
    location = ref.location(spark)
    if location is None:
        return -1
    return recorded_txn_version(spark, location, app_id)


def snapshot_txn_version(spark: SparkSession, target: TableRef, app_id: str) -> int:
    """The last ``txnVersion`` of snapshot commits under ``app_id`` in bronze (``-1`` for
    none, or no bronze table yet: looked up first)."""
    if not target.exists(spark):
        return -1
    return txn_version(spark, target, app_id)


# -- facts rows ------------------------------------------------------------------------------


@dataclass(frozen=True)
class LastBatch:
    """The newest micro-batch row of an app_id: what the sink's rewind check compares."""

    batch_id: int
    max_lsn: str | None
    end_lsn: str | None
    rows: int | None


#: the columns :func:`last_batch` reads
_LAST_BATCH = ("batch_id", "max_lsn", "end_lsn", "rows")


def last_batch(
    spark: SparkSession, facts: TableRef, app_id: str, *, from_batch: int | None = None
) -> LastBatch | None:
    """The newest micro-batch row (``event`` NULL, ``batch_id`` set) of ``app_id``; ``None``
    when there is none. The table must exist.

    ``from_batch``: a batch id the caller expects the newest row at or after (the facts
    commits' ``txnVersion``). Rows from there on are read first, which Delta's statistics on
    ``batch_id`` narrow to the newest files instead of every file of the table (one per
    batch); when there is none, the whole table is read. The answer is the same either way.
    """
    from pyspark.sql import functions as sf

    def newest(since: int | None) -> Row | None:
        rows = facts.read(spark).where((sf.col("app_id") == app_id) & sf.col("event").isNull())
        rows = rows.where(
            sf.col("batch_id").isNotNull() if since is None else sf.col("batch_id") >= since
        )
        return rows.orderBy(sf.col("batch_id").desc()).select(*_LAST_BATCH).first()

    row = newest(from_batch) if from_batch is not None and from_batch >= 0 else None
    if row is None:
        row = newest(None)
    if row is None:
        return None
    return LastBatch(
        batch_id=int(row["batch_id"]),
        max_lsn=row["max_lsn"],
        end_lsn=row["end_lsn"],
        rows=None if row["rows"] is None else int(row["rows"]),
    )


@dataclass(frozen=True)
class TableBatch:
    """A sink id's newest micro-batch row as a database stream resumes from it: its batch id,
    its end (``None``: not recorded) and when it was written."""

    batch_id: int
    end_lsn: str | None
    end_commit_ts: datetime | None
    written_at: datetime | None


def last_batches(
    spark: SparkSession, facts: TableRef, sink_ids: Sequence[str]
) -> dict[str, TableBatch]:
    """The newest micro-batch row of each of ``sink_ids`` that has one, in one aggregation of
    the facts table (which must exist)."""
    if not sink_ids:
        return {}
    from pyspark.sql import functions as sf

    rows = (
        facts.read(spark)
        .where(
            sf.col("app_id").isin(list(sink_ids))
            & sf.col("event").isNull()
            & sf.col("batch_id").isNotNull()
        )
        .groupBy("app_id")
        .agg(sf.max(sf.struct("batch_id", "end_lsn", "end_commit_ts", "written_at")).alias("last"))
        .collect()
    )
    out: dict[str, TableBatch] = {}
    for row in rows:
        last = row["last"]
        out[str(row["app_id"])] = TableBatch(
            int(last["batch_id"]), last["end_lsn"], last["end_commit_ts"], last["written_at"]
        )
    return out


@dataclass(frozen=True)
class Member:
    """A table's newest membership row of a database stream: joined (``True``) or left, the
    database batch it was written in and the table's micro-batch id at that batch (a joined
    table's batch id is the database batch id plus ``version - database_batch``)."""

    joined: bool
    database_batch: int
    version: int
    #: the table's bronze table as the row names it
    target: str | None = None
    #: the database batch's end when the row was written (a joining table's ``latest``)
    lsn: str | None = None
    #: a joined table's start as recorded (``start_lsn``; ``None``: its whole change table),
    #: when the row records one (``start_recorded``)
    start: str | None = None
    start_recorded: bool = False


#: the event kinds of a database stream's membership rows
MEMBER_EVENTS = ("database_joined", "database_left")
#: the event kind of a table a database stream parked (``detail``: the stream, its batch, the
#: error)
PARKED_EVENT = "table_parked"


def database_members(
    spark: SparkSession, facts: TableRef, database_app_id: str
) -> dict[str, Member]:
    """Each sink id's newest membership row written by the database stream
    ``database_app_id`` (its ``detail`` names the stream), in one read of the facts table
    (none when it does not exist)."""
    if not facts.exists(spark):
        return {}
    from pyspark.sql import functions as sf

    rows = (
        facts.read(spark)
        .where(sf.col("event").isin(list(MEMBER_EVENTS)))
        .select("app_id", "event", "batch_id", "detail", "written_at", "target", "end_lsn")
        .orderBy("written_at")
        .collect()
    )
    out: dict[str, Member] = {}
    for row in rows:  # oldest first: of two rows of one batch, the later written wins
        try:
            detail = json.loads(row["detail"] or "{}")
        except ValueError:
            continue
        if not isinstance(detail, dict) or detail.get("database_app_id") != database_app_id:
            continue
        member = Member(
            row["event"] == MEMBER_EVENTS[0],
            int(detail["database_batch"]),
            int(row["batch_id"]),
            row["target"],
            row["end_lsn"],
            detail.get("start_lsn"),
            "start_lsn" in detail,
        )
        known = out.get(str(row["app_id"]))
        if known is None or member.database_batch >= known.database_batch:
            out[str(row["app_id"])] = member
    return out


def recorded_targets_of(
    spark: SparkSession, facts: TableRef, app_ids: Sequence[str]
) -> dict[str, set[str]]:
    """The targets the facts table records for each of ``app_ids`` (as written), in one
    aggregation; the table must exist."""
    from pyspark.sql import functions as sf

    rows = (
        facts.read(spark)
        .where(sf.col("app_id").isin(list(app_ids)) & sf.col("target").isNotNull())
        .select("app_id", "target")
        .distinct()
        .collect()
    )
    out: dict[str, set[str]] = {}
    for row in rows:
        out.setdefault(str(row["app_id"]), set()).add(str(row["target"]))
    return out


def recorded_targets(
    spark: SparkSession, facts: TableRef, app_id: str, *, other_than: str | None = None
) -> list[str]:
    """The targets the facts table records for ``app_id`` (as they were written), if any,
    leaving out those spelled exactly ``other_than``. With ``other_than`` one such row is asked
    for first (a scan that stops at the first row found, no shuffle), and the distinct targets
    are read only when there is one: a stream that always names its target the same way pays
    the cheap scan only."""
    if not facts.exists(spark):
        return []
    from pyspark.sql import functions as sf

    rows = facts.read(spark).where((sf.col("app_id") == app_id) & sf.col("target").isNotNull())
    if other_than is not None:
        rows = rows.where(sf.col("target") != other_than)
        if not rows.select("target").limit(1).collect():
            return []
    return sorted(str(r["target"]) for r in rows.select("target").distinct().collect())


def bootstrap_lsn(
    spark: SparkSession, facts: TableRef | None, app_id: str, target: TableRef
) -> str | None:
    """The LSN of this app_id's newest ``bootstrap`` row written for ``target`` (in any
    spelling); ``None`` without one or without a facts table."""
    from pyspark.sql import functions as sf

    if facts is None or not facts.exists(spark):
        return None
    rows = (
        facts.read(spark)
        .where((sf.col("app_id") == app_id) & (sf.col("event") == "bootstrap"))
        .groupBy("target")
        .agg(sf.max("max_lsn").alias("lsn"))
        .collect()
    )
    found = [
        r["lsn"]
        for r in rows
        if r["lsn"] is not None
        and r["target"] is not None
        and same_table(spark, table_ref(r["target"], "target"), target)
    ]
    return max(found) if found else None


def newest_headroom(
    spark: SparkSession, facts: TableRef, app_id: str
) -> tuple[float | None, datetime] | None:
    """The retention headroom (hours) of ``app_id``'s newest micro-batch row and when that row
    was written; the hours are ``None`` when the row holds none (no metrics directory, or a
    login that cannot read the cleanup job's retention); ``None`` without a batch row."""
    from pyspark.sql import functions as sf

    if not facts.exists(spark):
        return None
    row = (
        facts.read(spark)
        .where((sf.col("app_id") == app_id) & sf.col("event").isNull())
        .where(sf.col("batch_id").isNotNull())
        .orderBy(sf.col("batch_id").desc())
        .select("retention_headroom_hours", "written_at")
        .first()
    )
    if row is None:
        return None
    hours = row["retention_headroom_hours"]
    return (None if hours is None else float(hours)), row["written_at"]


# -- bronze ----------------------------------------------------------------------------------


def _stamp(df: DataFrame) -> Column:
    from pyspark.sql import functions as sf

    if "_snapshot" in df.columns:
        return sf.coalesce(sf.col("_snapshot"), sf.col("_start_lsn"))
    return sf.col("_start_lsn")


def _max_snapshot(df: DataFrame) -> str | None:
    from pyspark.sql import functions as sf

    row = df.where(sf.col("_operation") == 0).agg(sf.max(_stamp(df))).first()
    return None if row is None else row[0]


def _from_history(spark: SparkSession, target: TableRef, app_id: str) -> str | None:
    """The snapshot LSN from the ``userMetadata`` of this app_id's snapshot commit (the only
    trace in the target of an empty table's snapshot)."""
    from pyspark.sql import functions as sf

    history = target.delta_table(spark).history().where(sf.col("userMetadata").isNotNull())
    for row in history.select("userMetadata").collect():
        try:
            meta = json.loads(row["userMetadata"])
        except ValueError:
            continue
        if (
            isinstance(meta, dict)
            and meta.get("app_id") == app_id
            and meta.get("event") == "bootstrap"
        ):
            lsn = meta.get("snapshot_lsn")
            return lsn if isinstance(lsn, str) else None
    return None


def find_snapshot(
    spark: SparkSession,
    target: TableRef,
    app_id: str | None,
    instances: Callable[[], Sequence[str]],
    usable: Callable[[str], bool] | None = None,
) -> tuple[str | None, bool]:
    """The LSN of a snapshot already in bronze, and whether it was found there (``True``) or
    not at all (``None, False``).

    ``app_id``: the stream's, or ``None`` for a snapshot taken without one. In order: the
    snapshot commit of its owner (``ids.owned_id``; its LSN from the rows, else from the
    commit's ``userMetadata``, whose ``app_id`` is ``ids.owner``), else the newest
    operation-0 rows of any of ``instances()`` (called only when bronze holds operation-0
    rows), when ``usable`` (if given) accepts its LSN: a snapshot another stream took is no
    start for this one once the changes after it are purged.
    """
    from pyspark.sql import functions as sf

    if not target.exists(spark):
        return None, False
    own = txn_version(spark, target, ids.owned_id(app_id))
    if own >= 0:
        found = _max_snapshot(target.read(spark)) or _from_history(spark, target, ids.owner(app_id))
        if found is not None:
            return found, True
    df = target.read(spark)
    if "_chunk" in df.columns:  # a chunked snapshot's rows are whole only once closed
        df = df.where(sf.col("_chunk").isNull())
    if df.where(sf.col("_operation") == 0).limit(1).count() == 0:
        return None, False
    names = [name.lower() for name in instances()]
    found = _max_snapshot(df.where(sf.lower(sf.col("_capture_instance")).isin(names)))
    if found is not None and usable is not None and not usable(found):
        return None, False
    return found, found is not None


def newest_whole_snapshot(
    spark: SparkSession, target: TableRef, after: str | None = None
) -> tuple[str, Any] | None:
    """The newest whole snapshot in the target (operation-0 rows not read as a chunk): its
    LSN (``coalesce(_snapshot, _start_lsn)``) and commit time; ``None`` without one, or without
    one newer than ``after`` when given. ``after`` is spelled on the two columns rather than on
    the stamp, so that Delta skips the files whose statistics rule them out (an incremental
    ``apply_changes`` call then reads no file of the snapshot it rebuilt from)."""
    from pyspark.sql import functions as sf

    if not target.exists(spark):
        return None
    df = target.read(spark).where(sf.col("_operation") == 0)
    if "_chunk" in df.columns:
        df = df.where(sf.col("_chunk").isNull())
    if after is not None:
        newer = sf.col("_start_lsn") > sf.lit(after)
        if "_snapshot" in df.columns:
            newer = (sf.col("_snapshot").isNotNull() & (sf.col("_snapshot") > sf.lit(after))) | (
                sf.col("_snapshot").isNull() & newer
            )
        df = df.where(newer)
    row = (
        df.select(_stamp(df).alias("s"), "_commit_ts").orderBy(sf.col("s").desc()).limit(1).first()
    )
    return None if row is None else (str(row["s"]), row["_commit_ts"])


def snapshot_rows(spark: SparkSession, target: TableRef, lsn: str) -> tuple[int, Any]:
    """Rows of the snapshot ``lsn`` in the target and their commit time (``0, None`` when the
    target does not exist yet)."""
    from pyspark.sql import functions as sf

    if not target.exists(spark):
        return 0, None
    df = target.read(spark)
    row = (
        df.where((sf.col("_operation") == 0) & (_stamp(df) == lsn))
        .agg(sf.count(sf.lit(1)), sf.max("_commit_ts"))
        .first()
    )
    assert row is not None  # a global aggregation returns one row
    return int(row[0]), row[1]


def chunk_rows(
    spark: SparkSession, target: TableRef, snapshot_lsn: str, chunks: Sequence[int] | None
) -> dict[int, tuple[int, str | None]]:
    """``(rows, stamp)`` per chunk of the chunked snapshot ``snapshot_lsn`` in the target: the
    chunk's rows and the LSN they were read at (their ``_start_lsn``), for each of ``chunks``
    (``(0, None)`` for a chunk without rows), or for every chunk the target holds rows of
    (``None``). One Spark job."""
    from pyspark.sql import functions as sf

    found: dict[int, tuple[int, str | None]] = dict.fromkeys(chunks or (), (0, None))
    if (chunks is not None and not chunks) or not target.exists(spark):
        return found
    df = target.read(spark)
    if "_chunk" not in df.columns or "_snapshot" not in df.columns:
        return found
    which = sf.lit(True) if chunks is None else sf.col("_chunk").isin(*chunks)
    rows = (
        df.where(
            (sf.col("_operation") == 0)
            & (sf.col("_snapshot") == snapshot_lsn)
            & sf.col("_chunk").isNotNull()
            & which
        )
        .groupBy("_chunk")
        .agg(sf.count(sf.lit(1)).alias("n"), sf.max("_start_lsn").alias("stamp"))
        .collect()
    )
    found.update({int(r["_chunk"]): (int(r["n"]), r["stamp"]) for r in rows})
    return found


#: how many of bronze's newest commits :func:`newest_wave` reads, in turn, before it reads them
#: all (a call after a long pause finds its wave far back)
_HISTORY_STEPS = (25, 1000)


@dataclass(frozen=True)
class WaveCommit:
    """The newest wave commit of a chunked snapshot in bronze: its first and last chunk, and
    the ``backfill()`` run token and stamp its ``userMetadata`` names (``None`` in waves of
    earlier builds, or when bronze's history no longer holds the commit)."""

    first: int
    last: int
    run: str | None = None
    stamp: str | None = None


def newest_wave(
    spark: SparkSession, target: TableRef, sink: str, snapshot_lsn: str, version: int
) -> WaveCommit:
    """The wave commit of the chunked snapshot ``snapshot_lsn`` that recorded ``version`` under
    ``<sink>#snapchunks.<S>``: the commit whose ``userMetadata`` (``metadata.chunk_wave``)
    lists ``version`` among its chunks (the wave's first chunk; its last chunk in waves written
    before this rule, ADR 0200), read from bronze's history (``DESCRIBE HISTORY``, the newest
    25 commits, then 1,000, then all).

    When the history no longer holds it (older than the table's
    ``delta.logRetentionDuration``): the chunks from ``version`` to the highest of ``version``
    and the chunks bronze holds rows of, which misses only chunks without rows at that wave's
    end (read again, harmlessly, by the next wave: they add no row twice)."""
    from pyspark.sql import functions as sf

    for limit in (*_HISTORY_STEPS, None):
        text = f"DESCRIBE HISTORY {target.sql}" + ("" if limit is None else f" LIMIT {limit}")
        rows = spark.sql(text).select("userMetadata").collect()
        for commit in rows:
            found = _wave_commit(commit["userMetadata"], sink, snapshot_lsn, version)
            if found is not None:
                return found
        if limit is not None and len(rows) < limit:
            break  # that was the whole history
    df = target.read(spark)
    row = (
        df.where((sf.col("_snapshot") == snapshot_lsn) & sf.col("_chunk").isNotNull())
        .agg(sf.max("_chunk"))
        .first()
    )
    most = None if row is None else row[0]
    return WaveCommit(version, version if most is None else max(version, int(most)))


def _wave_commit(text: str | None, sink: str, snapshot_lsn: str, version: int) -> WaveCommit | None:
    """The wave a commit's ``userMetadata`` ``text`` describes when it is ``sink``'s wave of
    the snapshot ``snapshot_lsn`` that holds chunk ``version``; ``None`` for any other commit
    (another kind, sink, snapshot or range, or no JSON)."""
    try:
        meta = json.loads(text or "")
    except ValueError:
        return None
    if not isinstance(meta, dict) or meta.get("event") != "snapshot_chunk":
        return None
    chunks = meta.get("chunks")
    if (
        meta.get("app_id") != sink
        or meta.get("snapshot_lsn") != snapshot_lsn
        or not isinstance(chunks, list)
        or version not in chunks
    ):
        return None
    run, stamp = meta.get("attempt"), meta.get("lsn")
    return WaveCommit(
        min(int(c) for c in chunks),
        max(int(c) for c in chunks),
        run if isinstance(run, str) else None,
        stamp if isinstance(stamp, str) else None,
    )


@dataclass(frozen=True)
class ParkedTable:
    """A table a database stream parked: its capture instance, its bronze table as the row
    names it, and the error."""

    capture_instance: str
    target: str
    error: str


def database_parked(
    spark: SparkSession, facts: TableRef, database_app_id: str
) -> dict[str, ParkedTable]:
    """The tables the database stream ``database_app_id`` parked and has not written since:
    each table whose newest row (by ``written_at``) among its micro-batch rows, this stream's
    membership and ``table_parked`` rows and the re-snapshot rows (``snapshot_open``,
    ``resnapshot``) of its generations this stream never parked is a ``table_parked`` row, by
    the sink id that row names. A table's rows are those of all its generations
    (``<app_id>.g<n>``): a table parked with data loss and re-snapshotted into its next
    generation is no longer parked; one parked in a generation stays parked when that
    generation's chunked re-snapshot is finished later. One read of the facts table (none
    when it does not exist)."""
    if not facts.exists(spark):
        return {}
    from pyspark.sql import functions as sf

    kinds = [*MEMBER_EVENTS, PARKED_EVENT]
    ours = sf.get_json_object("detail", "$.database_app_id") == sf.lit(database_app_id)
    ever = [
        r["app_id"]
        for r in facts.read(spark)
        .where((sf.col("event") == PARKED_EVENT) & ours)
        .select("app_id")
        .distinct()
        .collect()
    ]
    if not ever:  # the usual answer, from the event rows alone
        return {}
    streams = sorted({ids.stream_of_sink(sid) for sid in ever})
    stream = sf.regexp_replace("app_id", ids.GENERATION_SUFFIX, "")
    app_id = sf.col("app_id")
    related = app_id.isin([*ever, *streams])
    for one in streams:  # prefixes Delta's file statistics can skip by
        related = related | app_id.startswith(ids.generations_prefix(one))
    rows = (
        facts.read(spark)
        .where(related & stream.isin(streams))
        .where(
            (sf.col("event").isNull() & sf.col("batch_id").isNotNull())
            | (sf.col("event").isin(kinds) & ours)
            # a re-snapshot of a generation never parked: a later generation took the table
            | (sf.col("event").isin("snapshot_open", "resnapshot") & ~app_id.isin(ever))
        )
        .groupBy(stream.alias("stream"))
        .agg(
            sf.max_by(sf.struct("event", "detail", "target", "app_id"), sf.col("written_at")).alias(
                "last"
            )
        )
        .where(sf.col("last.event") == PARKED_EVENT)
        .collect()
    )
    out: dict[str, ParkedTable] = {}
    for row in rows:
        last = row["last"]
        detail = json.loads(last["detail"])
        out[str(last["app_id"])] = ParkedTable(
            str(detail["capture_instance"]), str(last["target"] or ""), str(detail["error"])
        )
    return out
