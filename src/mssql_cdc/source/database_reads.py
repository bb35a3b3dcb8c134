"""What a database stream asks SQL Server and Spark's readers (``sink.DatabaseSource``;
docs/many-tables.md#the-database-stream): the instances' low-water marks, which instances
changed in a range, and each changed table's range, read in this process when small
(``local_read``) or as a batch read (``format("mssql_cdc")``).

Runs where Spark runs the database stream's ``foreachBatch`` function (the driver, or Spark
Connect's worker), and on the driver for ``start_database``'s checks. Holds the options (secrets
included: never in its repr).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from mssql_cdc._native import Lsn
from mssql_cdc.errors import SchemaChangedError
from mssql_cdc.options import parse_options
from mssql_cdc.source.catalog import table_instances
from mssql_cdc.source.client import CdcClient
from mssql_cdc.source.headroom import RetentionReader
from mssql_cdc.source.retention import held_instances
from mssql_cdc.source.retry import with_retry

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

__all__ = ["ServerReads"]

T = TypeVar("T")

#: options a table's read of a database stream leaves out: its range is the stream's batch (the
#: clock applied ``maxCommitsPerBatch`` to it)
_DROPPED = frozenset({"startinglsn", "endinglsn", "maxcommitsperbatch"})


class ServerReads:
    """What a database stream asks SQL Server and Spark (``sink.DatabaseSource``): one
    connection for the low-water marks and the changed-tables statements, kept for the run
    (never pickled), and each table's read: in this process when small, else a batch read
    through ``format("mssql_cdc")``.

    Args:
        options: each capture instance's options (checked), by name.
    """

    #: small ranges read in this process (``read_locally``); tests turn it off to have every
    #: range read by ``spark.read``
    local = True

    def __init__(self, options: Mapping[str, Mapping[str, str]]) -> None:
        self.options = {ci: dict(o) for ci, o in options.items()}
        self._client: CdcClient | None = None
        #: each instance's schema, inferred by its first read of the run
        self._schemas: dict[str, Any] = {}
        #: the cleanup job's retention for every read's metrics (read at most once an hour)
        self._retention: RetentionReader | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_client"] = None
        state["_schemas"] = {}
        state["_retention"] = None
        return state

    def __repr__(self) -> str:  # never the options: they hold secrets
        return f"ServerReads(tables={len(self.options)})"

    @property
    def client(self) -> CdcClient:
        if self._client is None:
            first = next(iter(self.options.values()))
            self._client = CdcClient(parse_options(first))
        return self._client

    def _retry(self, what: str, call: Callable[[], T]) -> T:
        return with_retry(self.client, what, call)

    def tables(self) -> dict[str, tuple[str, tuple[str, ...]]]:
        """Each capture instance the stream lists, by that name: its table's low-water mark
        (the oldest ``start_lsn`` of its instances, canonical text) and its instances' names,
        oldest first, as a batch read of it resolves them (``catalog.table_instances``: the
        name and its table's other instances, a disabled default name following the newest;
        a table between two instances reads the older below the newer's start, the newer
        from it); from one ``sys.sp_cdc_help_change_data_capture``. A name that resolves to
        none is left out."""
        instances = self._retry("capture instances", self.client.capture_instances)
        out: dict[str, tuple[str, tuple[str, ...]]] = {}
        for name in self.options:
            found = table_instances(name, instances)
            if found:
                # as the batch read's data-loss rule bounds it
                low = min(i.start_lsn for i in held_instances(found))
                out[name] = (str(low), tuple(i.name for i in found))
        return out

    def changed(self, names: Sequence[str], after: str, upto: str) -> set[str]:
        """The instances among ``names`` with changes in ``(after, upto]`` (one statement per
        250 instances)."""
        low, high = Lsn.parse(after), Lsn.parse(upto)
        return set(
            self._retry(
                "changed capture instances",
                lambda: self.client.changed_instances(names, low, high),
            )
        )

    def read(
        self,
        spark: SparkSession,
        capture_instance: str,
        after: str | None,
        upto: str,
        upto_commit_ts: str = "",
    ) -> DataFrame | tuple[StructType, pa.Table]:
        """The instance's changes ``(after, upto]`` (``after`` ``None``: from its
        ``startingLsn``): read here when they are fewer than ``local_read.LOCAL_ROWS`` (the
        batch read's plan and task code in this process: the schema and the rows, which the
        sink hands to Spark; the metrics and event files written to the table's
        ``metricsPath``, ``upto_commit_ts`` the end's commit time in them), else a batch read
        (``format("mssql_cdc")``, no metrics files) that the sink's write reads."""
        table = self.options[capture_instance]
        opts = {k: v for k, v in table.items() if k.lower() not in _DROPPED}
        opts["startingLsn"] = after if after is not None else _starting(table) or "earliest"
        opts["endingLsn"] = upto
        if self.local:  # with the table's metricsPath: its files for the table's facts row
            from mssql_cdc.source import local_read  # noqa: PLC0415 (it imports PySpark)

            parsed = parse_options(opts)
            known = self._schemas.get(capture_instance)
            if self._retention is None:
                self._retention = RetentionReader(self.client)
            try:
                found = local_read.read_locally(parsed, known, upto_commit_ts, self._retention)
            except SchemaChangedError:
                if known is None:
                    raise
                # the schema this run inferred cannot hold the range (a new capture instance
                # with a new column, a type widened): inferred again, the union of the
                # table's instances, as a restarted single stream's; bronze merges it
                del self._schemas[capture_instance]
                found = local_read.read_locally(parsed, None, upto_commit_ts, self._retention)
            if found is not None:
                self._schemas[capture_instance] = found[0]
                return found
        # a batch read writes no metrics files (its reader refuses metricsPath)
        opts = {k: v for k, v in opts.items() if k.lower() != "metricspath"}
        return spark.read.format("mssql_cdc").options(**opts).load()

    def start(self, capture_instance: str, upto: str, low: str | None = None) -> str | None:
        """A new table's start: ``startingLsn=latest`` is the batch's end (nothing older is
        read), or, when the table's capture instance begins after it (``low``, its low-water
        mark, past ``upto``: a table enabled while the stream is behind), the LSN just below
        its first change, so that the start is not taken for a loss; an LSN is itself,
        ``earliest`` (the default) is ``None``."""
        given = _starting(self.options[capture_instance])
        if given is None or given.lower() == "earliest":
            return None
        if given.lower() == "latest":
            if low is not None and low > upto:
                return str(Lsn.parse(low).prev())
            return upto
        return str(Lsn.parse(given))

    def check_instances(self, names: Sequence[str]) -> None:
        """Every name resolves to a table's instances as a batch read of it would
        (``catalog.table_instances``: listed by SQL Server for the login, or a disabled default
        name whose table has a newer instance), and no two names read one table (each table
        follows its own instance switches): one catalog read.

        Raises:
            ValueError: naming the instances.
        """
        instances = self._retry("capture instances", self.client.capture_instances)
        found = {n: table_instances(n, instances) for n in names}
        missing = [n for n, of in found.items() if not of]
        if missing:
            raise ValueError(
                f"capture instance(s) {missing} are not listed by "
                "sys.sp_cdc_help_change_data_capture for this login (not enabled, or the login "
                "may not read them)"
            )
        seen: dict[tuple[str, str], str] = {}
        for n in names:
            key = (found[n][0].source_schema, found[n][0].source_table)
            if key in seen:
                raise ValueError(
                    f"capture instances {seen[key]!r} and {n!r} are both of table "
                    f"{key[0]}.{key[1]}: give one (the stream reads a table's newer instance "
                    "after the older itself)"
                )
            seen[key] = n

    def close(self) -> None:
        """Closes the connection."""
        if self._client is not None:
            self._client.close()
            self._client = None


def _starting(options: Mapping[str, str]) -> str | None:
    return next((v for k, v in options.items() if k.lower() == "startinglsn"), None)
