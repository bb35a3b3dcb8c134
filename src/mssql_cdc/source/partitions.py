"""Input partitions: small frozen dataclasses of primitive values, pickled to executors."""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql.datasource import InputPartition

__all__ = ["ChangeRange", "SnapshotRange"]


@dataclass(frozen=True)
class ChangeRange(InputPartition):
    """The change rows of one capture instance with ``from_lsn <= __$start_lsn <= to_lsn``.

    ``columns`` are the declared captured columns this instance captures, as
    ``(name, SQL Server type)``. ``previous_commit_ts`` is the UTC commit time of the commit
    before the range (``""`` if unknown), for fall-back hours. The batch's last range has
    ``last`` set and carries the batch end (``end_lsn``, ``end_commit_ts``) for the metrics.
    """

    index: int
    capture_instance: str
    from_lsn: str
    to_lsn: str
    columns: tuple[tuple[str, str], ...]
    previous_commit_ts: str = ""
    last: bool = False
    end_lsn: str = ""
    end_commit_ts: str = ""
    #: the server clock: IANA zone name, or "" with ``offset_minutes``
    zone: str = ""
    offset_minutes: int = 0


@dataclass(frozen=True)
class SnapshotRange(InputPartition):
    """Current rows of ``source_schema.source_table`` with ``lo <= key < hi`` (``None`` = open
    end; no ``key``: the whole table), stamped with ``snapshot_lsn`` and its ``commit_ts``."""

    index: int
    capture_instance: str
    source_schema: str
    source_table: str
    columns: tuple[tuple[str, str], ...]
    snapshot_lsn: str
    commit_ts: str
    key: str = ""
    lo: int | None = None
    hi: int | None = None
