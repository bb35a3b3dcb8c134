"""Reading Delta's transaction ids (``SetTransaction``: ``txnAppId`` -> ``txnVersion``) and
whether a path holds a Delta table, in a way that works on classic Spark, Spark Connect and
platforms that ship Delta under other class names (ADR 0060).

Runs on the driver (or, on Spark Connect, in the ``foreachBatch`` worker). Two ways:

* a fast path through Delta's JVM class :data:`DELTA_LOG_CLASS` over py4j, taken only where the
  session has a JVM gateway and the class exists there;
* everywhere else, the table's ``_delta_log`` directory read through Spark's own file sources:
  list it (``binaryFile``, paths only), take the newest complete checkpoint (classic, multi-part
  or V2), read the ``txn`` column of the checkpoint and of the JSON commits after it, and keep
  the entry of the newest file that names the app id. This is the log protocol's own rule for
  the "latest" transaction of an app id (Delta protocol, "Transaction Identifiers").

Every read here lists the directory afresh and gives each read a unique option, so no plan
cache (Spark Connect keeps analysed plans per session) can answer with an older listing.
"""

from __future__ import annotations

import logging
import re
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from py4j.java_gateway import JavaClass, JavaObject
    from pyspark.sql import DataFrameReader, SparkSession

__all__ = [
    "DELTA_LOG_CLASS",
    "LogListing",
    "compute_transactions",
    "has_delta_jvm",
    "has_delta_log",
    "holds_other_files",
    "list_log",
    "recorded_txn_version",
]

log = logging.getLogger("mssql_cdc.sink")

#: Delta's JVM class the fast path uses; absent on Spark Connect (no JVM gateway) and on
#: platforms whose Delta lives under other names.
DELTA_LOG_CLASS = "org.apache.spark.sql.delta.DeltaLog"

_COMMIT = re.compile(r"^(\d{20})\.json$")
_CLASSIC = re.compile(r"^(\d{20})\.checkpoint\.parquet$")
_MULTI = re.compile(r"^(\d{20})\.checkpoint\.(\d{10})\.(\d{10})\.parquet$")
_V2 = re.compile(r"^(\d{20})\.checkpoint\.[0-9A-Fa-f-]{36}\.(json|parquet)$")
_TXN_SCHEMA = "txn STRUCT<appId: STRING, version: BIGINT>"
_MISSING = ("PATH_NOT_FOUND", "Path does not exist", "FileNotFoundException")


@dataclass(frozen=True)
class LogListing:
    """The files of one ``_delta_log`` directory that matter for reading its state.

    Attributes:
        commits: ``version -> path`` of the JSON commits.
        checkpoint: the newest complete checkpoint's version and files (``None``: none).
    """

    commits: dict[int, str]
    checkpoint: tuple[int, list[str]] | None

    @property
    def empty(self) -> bool:
        """No commit and no checkpoint: not a Delta table."""
        return not self.commits and self.checkpoint is None


def _fresh(reader: DataFrameReader) -> DataFrameReader:
    # A unique (ignored) option makes each read's plan unique, so a plan cache never serves it.
    return reader.option("mssql_cdc.read_id", uuid.uuid4().hex)


def _is_missing(exc: BaseException) -> bool:
    text = str(exc)
    return any(marker in text for marker in _MISSING)


def log_dir(location: str) -> str:
    """``<location>/_delta_log``."""
    return location.rstrip("/") + "/_delta_log"


def _surely_missing_locally(spark: SparkSession, directory: str) -> bool:
    """True only when ``directory`` is certainly absent and on the local file system, as
    Spark's own Hadoop file system answers it: a classic session (a JVM gateway), the path
    resolved with the session's Hadoop configuration (``sessionState.newHadoopConf``: the
    session's ``fs.defaultFS`` and file system options, as Spark and Delta resolve it) to the
    ``file`` scheme, and that file system saying it does not exist. False means: ask Spark (Spark
    Connect, another file system such as DBFS, ABFS or S3, or a platform that refuses the call).
    Spark's listing of a missing directory logs a ``WARN`` with a Java stack trace
    (``FileStreamSink``), which a new table's first checks would print several times (ADR
    0184)."""
    jvm = getattr(spark, "_jvm", None)
    session = getattr(spark, "_jsparkSession", None)
    if jvm is None or session is None:  # Spark Connect: the paths are the server's
        return False
    try:
        path = jvm.org.apache.hadoop.fs.Path(directory)
        fs = path.getFileSystem(session.sessionState().newHadoopConf())
        if str(fs.getScheme()) != "file":
            return False
        return not bool(fs.exists(path))
    except Exception:  # a platform that refuses the call, a path Hadoop refuses: Spark decides
        return False


def holds_other_files(spark: SparkSession, location: str) -> bool:
    """True when ``location`` holds anything besides its ``_delta_log`` (files another writer
    left there: Parquet, CSV, a ``_SUCCESS`` marker): a location that holds no Delta table
    must be empty before a first append makes it one. Asked of Spark's own Hadoop file system
    on a classic session (one listing of the directory's top level); on Spark Connect,
    through Spark's file source (``binaryFile``, paths only, recursively; names starting with
    ``_`` or ``.`` are left out there, as Spark leaves them out of every file source). False
    when the location does not exist.
    """
    jvm = getattr(spark, "_jvm", None)
    session = getattr(spark, "_jsparkSession", None)
    if jvm is not None and session is not None:
        try:
            path = jvm.org.apache.hadoop.fs.Path(location)
            fs = path.getFileSystem(session.sessionState().newHadoopConf())
            if not bool(fs.exists(path)):
                return False
            names = [str(s.getPath().getName()) for s in fs.listStatus(path)]
            return any(name != "_delta_log" for name in names)
        except Exception as exc:  # a platform that refuses the call: Spark's file source
            log.debug("listing %s through Hadoop failed (%s); asking Spark", location, exc)
    try:
        rows = (
            _fresh(spark.read.format("binaryFile"))
            .option("recursiveFileLookup", "true")
            .load(location)
            .select("path")
            .limit(1)
            .collect()
        )
    except Exception as exc:
        if _is_missing(exc):
            return False
        raise
    return bool(rows)


def list_log(spark: SparkSession, location: str) -> LogListing:
    """Lists ``<location>/_delta_log`` through Spark (any file system Spark can read).

    Returns:
        The listing; empty when the directory does not exist.
    """
    if _surely_missing_locally(spark, log_dir(location)):
        return LogListing({}, None)
    try:
        rows = (
            _fresh(spark.read.format("binaryFile")).load(log_dir(location)).select("path").collect()
        )
    except Exception as exc:
        if _is_missing(exc):
            return LogListing({}, None)
        raise
    commits: dict[int, str] = {}
    singles: dict[int, list[str]] = {}
    parts: dict[tuple[int, int], list[str]] = {}
    for row in rows:
        path = str(row["path"])
        name = path.rsplit("/", 1)[-1]
        if m := _COMMIT.match(name):
            commits[int(m.group(1))] = path
        elif (m := _CLASSIC.match(name)) or (m := _V2.match(name)):
            singles.setdefault(int(m.group(1)), [path])
        elif m := _MULTI.match(name):
            parts.setdefault((int(m.group(1)), int(m.group(3))), []).append(path)
    complete = dict(singles)
    for (version, total), paths in parts.items():
        if len(paths) == total and version not in complete:
            complete[version] = sorted(paths)
    newest = max(complete, default=None)
    checkpoint = None if newest is None else (newest, complete[newest])
    return LogListing(commits, checkpoint)


def has_delta_log(spark: SparkSession, location: str) -> bool:
    """True when ``location`` holds a Delta table (its log has a commit or a checkpoint)."""
    return not list_log(spark, location).empty


def _delta_log_class(spark: SparkSession) -> JavaClass | None:
    """Delta's JVM ``DeltaLog`` class; ``None`` when the session has no JVM gateway or the
    class is not on its class path."""
    jvm = getattr(spark, "_jvm", None)
    if jvm is None or getattr(spark, "_jsparkSession", None) is None:
        return None
    from py4j.java_gateway import JavaClass

    found: object = jvm
    for part in DELTA_LOG_CLASS.split("."):
        found = getattr(found, part)
    if not isinstance(found, JavaClass):  # py4j answers JavaPackage for a missing class
        log.debug(
            "%s is not on the class path; reading the Delta log through Spark", DELTA_LOG_CLASS
        )
        return None
    return found


def has_delta_jvm(spark: SparkSession) -> bool:
    """True when the session reaches Delta's JVM classes (the fast path)."""
    return _delta_log_class(spark) is not None


def _jvm_snapshot(spark: SparkSession, location: str) -> JavaObject | None:
    """The current snapshot of ``location`` through Delta's JVM ``DeltaLog`` (which Delta
    caches per path), its log listed afresh (``DeltaLog.update``); ``None`` when the session
    has no JVM gateway or the class is not on its class path."""
    found = _delta_log_class(spark)
    jvm = getattr(spark, "_jvm", None)
    if found is None or jvm is None:
        return None
    delta_log = found.forTable(getattr(spark, "_jsparkSession", None), location)
    none = jvm.scala.Option.empty()
    snapshot: JavaObject = delta_log.update(False, none, none)
    return snapshot


def _jvm_txn_version(spark: SparkSession, location: str, app_id: str) -> int | None:
    """The fast path; ``None`` when the session has no JVM gateway or no such class."""
    snapshot = _jvm_snapshot(spark, location)
    if snapshot is None:
        return None
    if snapshot.version() < 0:
        return -1
    entry = snapshot.transactions().get(app_id)
    return int(entry.get()) if entry.isDefined() else -1


def compute_transactions(spark: SparkSession, location: str) -> bool:
    """Has Delta compute the set transactions of the table's current version, which it keeps
    with that version's snapshot: the next transactional append to the table finds them there
    instead of rebuilding the table's state from its log first (ADR 0177).

    Runs on the driver, where the session has Delta's JVM classes (classic Spark): there it
    costs what the next commit would have spent (on open-source Delta one to three small Spark
    jobs over the log) and returns True. Returns False, having done nothing, on Spark Connect or
    where Delta lives under other class names; and for a location with no table yet.
    """
    snapshot = _jvm_snapshot(spark, location)
    if snapshot is None or snapshot.version() < 0:
        return False
    snapshot.transactions()
    return True


def _txn_in(spark: SparkSession, paths: list[str], app_id: str, fmt: str) -> int | None:
    """The ``txnVersion`` of ``app_id`` in the newest of ``paths`` that has one."""
    from pyspark.sql import functions as sf

    row = (
        _fresh(spark.read.schema(_TXN_SCHEMA).format(fmt))
        .load(paths)
        .where(sf.col("txn.appId") == app_id)
        .select(sf.col("_metadata.file_path").alias("file"), sf.col("txn.version").alias("v"))
        .orderBy(sf.col("file").desc(), sf.col("v").desc())
        .first()
    )
    return None if row is None else int(row["v"])


def _log_txn_version(spark: SparkSession, location: str, app_id: str) -> int:
    listing = list_log(spark, location)
    if listing.empty:
        return -1
    since = -1 if listing.checkpoint is None else listing.checkpoint[0]
    later = [listing.commits[v] for v in sorted(listing.commits) if v > since]
    if later:
        # commit file names are zero-padded versions: the newest sorts last
        found = _txn_in(spark, later, app_id, "json")
        if found is not None:
            return found
    if listing.checkpoint is not None:
        files = listing.checkpoint[1]
        by_format: dict[str, list[str]] = {}
        for path in files:
            by_format.setdefault("json" if path.endswith(".json") else "parquet", []).append(path)
        for fmt, paths in by_format.items():
            found = _txn_in(spark, paths, app_id, fmt)
            if found is not None:
                return found
    return -1


def recorded_txn_version(spark: SparkSession, location: str, app_id: str) -> int:
    """The last ``txnVersion`` Delta recorded for ``app_id`` in the table at ``location``.

    Returns:
        The version; ``-1`` when there is no table there or it holds none for ``app_id``.
    """
    fast = _jvm_txn_version(spark, location, app_id)
    if fast is not None:
        return fast
    return _log_txn_version(spark, location, app_id)
