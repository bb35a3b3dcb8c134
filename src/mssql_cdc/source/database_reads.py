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
from mssql_cdc.options import parse_options
from mssql_cdc.source.client import CdcClient
from mssql_cdc.source.retry import with_retry

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

__all__ = ["ServerReads"]

T = TypeVar("T")

#: options a table's batch read of a database stream leaves out (the read's range is the
#: stream's; its metrics are not folded)
_DROPPED = frozenset({"metricspath", "startinglsn", "endinglsn"})


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

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_client"] = None
        state["_schemas"] = {}
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

    def low_water(self) -> dict[str, str]:
        """``sys.sp_cdc_help_change_data_capture``'s ``start_lsn`` of each instance the login
        can read (one statement)."""
        instances = self._retry("capture instances", self.client.capture_instances)
        return {i.name: str(i.start_lsn) for i in instances}

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
        self, spark: SparkSession, capture_instance: str, after: str | None, upto: str
    ) -> DataFrame | tuple[StructType, pa.Table]:
        """The instance's changes ``(after, upto]`` (``after`` ``None``: from its
        ``startingLsn``): read here when they are fewer than ``local_read.LOCAL_ROWS`` (the
        batch read's plan and task code in this process: the schema and the rows, which the
        sink hands to Spark), else a batch read (``format("mssql_cdc")``) that the sink's
        write reads."""
        table = self.options[capture_instance]
        opts = {k: v for k, v in table.items() if k.lower() not in _DROPPED}
        opts["startingLsn"] = after if after is not None else _starting(table) or "earliest"
        opts["endingLsn"] = upto
        if self.local:
            from mssql_cdc.source import local_read  # noqa: PLC0415 (it imports PySpark)

            found = local_read.read_locally(
                parse_options(opts), self._schemas.get(capture_instance)
            )
            if found is not None:
                self._schemas[capture_instance] = found[0]
                return found
        return spark.read.format("mssql_cdc").options(**opts).load()

    def start(self, capture_instance: str, upto: str) -> str | None:
        """A new table's start: ``startingLsn=latest`` is the batch's end (nothing older is
        read), an LSN is itself, ``earliest`` (the default) is ``None``."""
        given = _starting(self.options[capture_instance])
        if given is None or given.lower() == "earliest":
            return None
        if given.lower() == "latest":
            return upto
        return str(Lsn.parse(given))

    def check_instances(self, names: Sequence[str]) -> None:
        """Every name is an instance SQL Server lists for the login, and no two are instances of
        one table (a table's switch to a new instance is followed by its single stream): one
        catalog read.

        Raises:
            ValueError: naming the instances.
        """
        instances = {
            i.name: i for i in self._retry("capture instances", self.client.capture_instances)
        }
        missing = [n for n in names if n not in instances]
        if missing:
            raise ValueError(
                f"capture instance(s) {missing} are not listed by "
                "sys.sp_cdc_help_change_data_capture for this login (not enabled, or the login "
                "may not read them)"
            )
        seen: dict[tuple[str, str], str] = {}
        for n in names:
            key = (instances[n].source_schema, instances[n].source_table)
            if key in seen:
                raise ValueError(
                    f"capture instances {seen[key]!r} and {n!r} are both of table "
                    f"{key[0]}.{key[1]}: give one (a database stream follows no instance switch)"
                )
            seen[key] = n

    def close(self) -> None:
        """Closes the connection."""
        if self._client is not None:
            self._client.close()
            self._client = None


def _starting(options: Mapping[str, str]) -> str | None:
    return next((v for k, v in options.items() if k.lower() == "startinglsn"), None)
