"""Input partitions: small frozen dataclasses of primitive values, pickled to executors."""

from __future__ import annotations

from dataclasses import dataclass, field

from pyspark.sql.datasource import InputPartition

__all__ = ["Bound", "ChangeRange", "SnapshotRange"]


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
    #: the cleanup job's retention in minutes (last range only; ``None``: unknown)
    retention_minutes: int | None = None
    #: an Entra ID token the driver made for this batch's tasks (a login whose secret stays on
    #: the driver, mssql_cdc.source.entra); never in a repr
    access_token: str | None = field(default=None, repr=False, compare=False)


#: a key bound value as pickled to executors: integers, bits and binary as they are, other key
#: types as text the query CASTs to the key column's type
Bound = None | bool | int | str | bytes


@dataclass(frozen=True)
class SnapshotRange(InputPartition):
    """Current rows of ``source_schema.source_table`` with ``lo <= keys < hi`` in key order
    (``None`` = open end; no ``keys``: the whole table), stamped with ``snapshot_lsn`` and its
    ``commit_ts``. ``keys`` are ``(column, declared SQL type)``; ``chunk`` is the
    ``snapshotChunks`` index written to ``_chunk``."""

    index: int
    capture_instance: str
    source_schema: str
    source_table: str
    columns: tuple[tuple[str, str], ...]
    snapshot_lsn: str
    commit_ts: str
    keys: tuple[tuple[str, str], ...] = ()
    lo: tuple[Bound, ...] | None = None
    hi: tuple[Bound, ...] | None = None
    chunk: int | None = None
    #: an Entra ID token the driver made for this batch's tasks (a login whose secret stays on
    #: the driver, mssql_cdc.source.entra); never in a repr
    access_token: str | None = field(default=None, repr=False, compare=False)
