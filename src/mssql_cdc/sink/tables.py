"""Delta tables named by a catalog name or a path: parsing, quoting, resolving, existence,
reads, idempotent appends, race-safe creation with comments and Delta's recorded transaction
versions.

Everything here runs on the driver. A table reference is a catalog name of one to three or more
parts (``orders``, ``bronze.orders``, ``main.bronze.orders``, parts optionally in backticks) or
a path: ``delta.`/data/orders``` or anything with ``/`` or ``:`` in it (``/data/orders``,
``s3://bucket/orders``). A name reaches SQL with every part in backticks (an embedded backtick
doubled), so three-part Unity Catalog names and odd characters parse.

Two references are the same table when they resolve alike (:func:`same_table`): paths compared
normalised (``/data/orders/`` is ``/data/orders``), names resolved against the session's current
catalog and database (``bronze.orders`` is ``spark_catalog.bronze.orders`` there), and a name
and a path compared through the named table's location.
"""

from __future__ import annotations

import logging
import os
import posixpath
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from delta.tables import DeltaTable
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

__all__ = [
    "COLUMN_MAPPING_PROPERTIES",
    "TableRef",
    "Txn",
    "columns_of",
    "create_by_append",
    "create_table",
    "ensure_table",
    "metadata_changed",
    "needs_column_mapping",
    "normal_path",
    "quote",
    "same_table",
    "table_ref",
]

from mssql_cdc.sink.ddl import columns_ddl, quote_identifier, run_alter_properties, run_create_table
from mssql_cdc.sink.schemas import TableKind
from mssql_cdc.sink.txn_ids import has_delta_log, holds_other_files

log = logging.getLogger("mssql_cdc.sink")

#: characters Delta refuses in column names unless column mapping is on
_MAPPING_CHARS = frozenset(" ,;{}()\n\t=")
#: the table properties of Delta column mapping by name (docs.delta.io, "Delta column mapping")
COLUMN_MAPPING_PROPERTIES = {
    "delta.columnMapping.mode": "name",
    "delta.minReaderVersion": "2",
    "delta.minWriterVersion": "5",
}


def needs_column_mapping(name: str) -> bool:
    """Whether Delta refuses the column name ``name`` unless column mapping is on (a space, a
    tab, a newline or one of ``,;{}()=``)."""
    return bool(_MAPPING_CHARS.intersection(name))


# a scheme of two or more characters (one letter is a Windows drive)
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]+):")
# one part of a dotted name, in backticks or not, and the dot after it (or the end)
_PART = re.compile(r"\s*(?:`((?:[^`]|``)*)`|([^.`]*))\s*(\.|$)")
#: error classes and exception names of a creation that lost a race to another writer
_RACE_ERRORS = (
    "DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION",
    "TABLE_OR_VIEW_ALREADY_EXISTS",
    "TableAlreadyExistsException",
    "DELTA_PROTOCOL_CHANGED",
    "ProtocolChangedException",
    "DELTA_METADATA_CHANGED",
    "MetadataChangedException",
    "DELTA_CONCURRENT",
    "ConcurrentAppendException",
    "FileAlreadyExistsException",
)
#: how long a creation that lost a race waits for the winner's table to appear
ADOPT_SECONDS = 30.0


def quote(part: str) -> str:
    """One identifier in backticks, an embedded backtick doubled: ``a`b`` -> ```a``b```."""
    return quote_identifier(part)


def _name_parts(text: str, what: str) -> tuple[str, ...]:
    """The parts of a dotted name; a part in backticks may hold dots and doubled backticks."""
    parts: list[str] = []
    pos = 0
    while True:
        match = _PART.match(text, pos)
        if match is None:
            raise ValueError(
                f"{what} {text!r}: expected name parts separated by '.', a part holding other "
                "characters in backticks (`my-schema`.orders)"
            )
        quoted, plain, sep = match.groups()
        part = quoted.replace("``", "`") if quoted is not None else plain.strip()
        if not part:
            raise ValueError(
                f"{what} {text!r}: an empty name part; give catalog.schema.table, schema.table "
                "or table (parts may be in backticks)"
            )
        parts.append(part)
        if not sep:
            return tuple(parts)
        pos = match.end()


def normal_path(path: str) -> str:
    """A table path in one spelling: ``file:`` dropped, a local path made absolute and
    normalised, a URI's scheme lower-cased; no trailing ``/``."""
    p = path.strip()
    if p.lower().startswith("file:"):
        p = "/" + p[len("file:") :].lstrip("/")
    match = _SCHEME.match(p)
    if match:
        scheme = match.group(1).lower()
        rest = p[match.end() :]
        head, sep, tail = rest.partition("//")
        if not head and sep:  # scheme://authority/path
            authority, slash, inner = tail.partition("/")
            inner = posixpath.normpath("/" + inner) if slash else ""
            return f"{scheme}://{authority}{'' if inner == '/' else inner}"
        return f"{scheme}:{posixpath.normpath(rest) if rest else rest}".rstrip("/")
    return os.path.normpath(os.path.abspath(p))


class Txn(NamedTuple):
    """A Delta ``SetTransaction``: the ``txnAppId`` and ``txnVersion`` an append carries, so
    that Delta skips it when ``version`` is not above the one recorded for ``app_id``. Built
    only by ``sink.ledger.ids``; this module carries it to Delta's writer options."""

    app_id: str
    version: int


@dataclass(frozen=True)
class TableRef:
    """A Delta table: exactly one of ``name`` (catalog) and ``path`` is set.

    ``text`` is what the caller passed; it is what the facts ``target`` and the control table's
    ``table_name`` record. ``parts`` are the name's parts, unquoted.
    """

    text: str
    name: str | None = None
    path: str | None = None
    parts: tuple[str, ...] = field(default=())

    @property
    def sql(self) -> str:
        """The table in SQL: the name with every part quoted, or ``delta.`<path>```."""
        if self.path is not None:
            return "delta." + quote(self.path)
        return ".".join(quote(p) for p in self.parts)

    @property
    def catalog_name(self) -> str:
        """The quoted catalog name (only for a table given by name)."""
        assert self.name is not None
        return self.sql

    def key(self, spark: SparkSession | None = None) -> tuple[str, ...]:
        """What identifies the table: ``("path", <normalised path>)``, or ``("name", catalog,
        ..., table)`` lower-cased, a one- or two-part name completed with the session's current
        catalog and database (without ``spark``: the parts as given)."""
        if self.path is not None:
            return ("path", normal_path(self.path))
        parts = [p.lower() for p in self.parts]
        if spark is not None and len(parts) < 3:
            catalog = spark.catalog.currentCatalog().lower()
            if len(parts) == 1:
                parts.insert(0, spark.catalog.currentDatabase().lower())
            parts.insert(0, catalog)
        return ("name", *parts)

    def location(self, spark: SparkSession) -> str | None:
        """Where the table's files are (``None`` when it does not exist)."""
        if self.path is not None:
            return self.path
        if not self.exists(spark):
            return None
        detail = spark.sql(f"DESCRIBE DETAIL {self.sql}").first()
        return None if detail is None else str(detail["location"])

    def exists(self, spark: SparkSession) -> bool:
        """True when the table exists (a path: holds a Delta log)."""
        if self.path is not None:
            # the log listed afresh, not DeltaTable.isDeltaTable (Delta's Connect plugin, whose
            # answer a Connect server's plan cache can serve stale): ADR 0060
            return has_delta_log(spark, self.path)
        return bool(spark.catalog.tableExists(self.catalog_name))

    def read(self, spark: SparkSession) -> DataFrame:
        """The table's current rows."""
        if self.path is not None:
            return spark.read.format("delta").load(self.path)
        return spark.read.table(self.sql)

    def append(
        self,
        df: DataFrame,
        txn: Txn | None,
        metadata: str | None = None,
        *,
        merge_schema: bool = False,
    ) -> None:
        """Appends ``df`` in one commit.

        Args:
            txn: the commit's ``SetTransaction``: Delta skips the commit silently when its
                version is not above the one recorded for its app id; ``None``: an append
                without one (no idempotency key, no ``userMetadata``).
            metadata: the commit's ``userMetadata`` (with ``txn`` only).
            merge_schema: Delta's ``mergeSchema`` (new columns added to the table).
        """
        writer = df.write.format("delta").mode("append")
        if txn is not None:
            writer = (
                writer.option("txnAppId", txn.app_id)
                .option("txnVersion", txn.version)
                .option("userMetadata", metadata or "")
            )
        if merge_schema:
            writer = writer.option("mergeSchema", "true")
        if self.path is not None:
            writer.save(self.path)
        else:
            writer.saveAsTable(self.catalog_name)

    def delta_table(self, spark: SparkSession) -> DeltaTable:
        """``delta.tables.DeltaTable`` for this table."""
        from delta.tables import DeltaTable

        if self.path is not None:
            return DeltaTable.forPath(spark, self.path)
        return DeltaTable.forName(spark, self.catalog_name)


def table_ref(text: str, what: str) -> TableRef:
    """Parses a table argument.

    Args:
        text: catalog name, ``delta.`<path>``` or a path.
        what: the argument's name, for the error message.

    Raises:
        TypeError: ``text`` is not a string.
        ValueError: ``text`` is empty, an unterminated ``delta.``` form, a name with an
            empty part, or a relative path (``out/bronze``).
    """
    if not isinstance(text, str):
        raise TypeError(f"{what} must be a table name or path (str), got {type(text).__name__}")
    stripped = text.strip()
    if not stripped:
        raise ValueError(f"{what} is empty; give a table name (db.table) or a path")
    if stripped.lower().startswith("delta.`"):
        if not stripped.endswith("`") or len(stripped) <= len("delta.``"):
            raise ValueError(f"{what} {text!r}: expected delta.`<path>`")
        return TableRef(text, path=stripped[len("delta.`") : -1].replace("``", "`"))
    if "/" in stripped or ":" in stripped:
        if not (stripped.startswith("/") or ":" in stripped):
            raise ValueError(
                f"{what} {text!r} is a relative path: give an absolute path or a URI "
                "(/data/bronze/orders, abfss://..., /Volumes/...). A relative path is resolved "
                "against each process's working directory, which differ between the driver, "
                "the executors and a Spark Connect server"
            )
        return TableRef(text, path=stripped)
    return TableRef(text, name=stripped, parts=_name_parts(stripped, what))


def same_table(spark: SparkSession | None, a: TableRef, b: TableRef) -> bool:
    """True when ``a`` and ``b`` are one table in two spellings (see the module doc); without
    ``spark`` only the spellings are compared (paths normalised, names as given)."""
    if a.key(spark) == b.key(spark):
        return True
    if spark is None or (a.path is None) == (b.path is None):
        return False
    named, pathed = (a, b) if a.path is None else (b, a)
    assert pathed.path is not None
    location = named.location(spark)
    return location is not None and normal_path(location) == normal_path(pathed.path)


#: what Delta says when another writer changed the table's metadata under a commit
_METADATA_CHANGED = ("DELTA_METADATA_CHANGED", "MetadataChangedException")


def metadata_changed(exc: BaseException) -> bool:
    """Whether ``exc`` is Delta refusing a commit because another writer's commit changed the
    table's metadata since the commit's snapshot (its comment or properties set, a column
    merged): the commit did not land."""
    text = f"{type(exc).__name__} {exc}"
    return any(marker in text for marker in _METADATA_CHANGED)


def _lost_race(exc: BaseException) -> bool:
    text = f"{type(exc).__name__} {exc}"
    return any(marker in text for marker in _RACE_ERRORS)


def create_table(
    spark: SparkSession,
    ref: TableRef,
    columns: Sequence[tuple[str, Any, str | None]],
    comment: str,
    properties: dict[str, str],
) -> None:
    """Creates the table unless it exists, with ``CREATE TABLE IF NOT EXISTS``.

    Two writers creating one new table at once both succeed: the one that loses the race
    (Delta's ``DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION``, a table that already exists, a
    concurrent first commit) waits up to :data:`ADOPT_SECONDS` for the winner's table to be
    readable and adopts it.

    Args:
        columns: ``(name, type, comment)``; ``type`` a SQL type string or a Spark ``DataType``.
        comment: the table comment.
        properties: table properties; ``delta.columnMapping.mode=name`` is added when a column
            name needs it (spaces, ``,;{}()=``).
    """
    props = dict(properties)
    if any(needs_column_mapping(name) for name, _, _ in columns):
        props.update(COLUMN_MAPPING_PROPERTIES)
    # SQL, not DeltaTable.createIfNotExists: no Delta Connect plugin needed (ADR 0061)
    if not _created(spark, ref, lambda: run_create_table(spark, ref.sql, columns, comment, props)):
        return
    if ref.path is not None and not ref.exists(spark):
        _created(spark, ref, lambda: _create_over_empty_log(spark, ref, columns, comment, props))
        return
    log.info("created Delta table %s (unless it existed)", ref.text)


def _created(spark: SparkSession, ref: TableRef, create: Callable[[], None]) -> bool:
    """Runs ``create``; ``False`` when it lost the race to another writer creating ``ref`` at
    the same time, whose table is then readable and adopted (else the error is raised)."""
    try:
        create()
    except Exception as exc:
        if not _lost_race(exc) or not _adopt(spark, ref):
            raise
        log.info("%s was created by another writer at the same time; using it", ref.text)
        return False
    return True


def _create_over_empty_log(
    spark: SparkSession,
    ref: TableRef,
    columns: Sequence[tuple[str, Any, str | None]],
    comment: str,
    properties: dict[str, str],
) -> None:
    """Creates the path table ``ref`` whose ``_delta_log`` directory exists without a commit
    or checkpoint: what a creation interrupted by a crash leaves (Delta makes the directory,
    and ``_staged_commits`` in it, before it writes the first commit). ``CREATE TABLE IF NOT
    EXISTS`` takes that directory for a table and does nothing, so every later read or write
    would fail with ``DELTA_TABLE_NOT_FOUND``. An append of no rows writes the first commit
    whatever the directory holds (the columns with their comments, the ``delta.`` properties
    as its options); the table comment and the other properties follow in a second commit. A
    writer that created the table meanwhile is not harmed: the append adds nothing."""
    log.warning(
        "%s: its _delta_log holds no commit (a creation interrupted by a crash); creating "
        "the table again",
        ref.text,
    )
    assert ref.path is not None
    writer = spark.createDataFrame([], columns_ddl(columns)).write.format("delta")
    for key, value in properties.items():
        if key.startswith("delta."):
            writer = writer.option(key, value)
    writer.mode("append").save(ref.path)
    rest = {k: v for k, v in properties.items() if not k.startswith("delta.")}
    _describe(spark, ref, comment, rest)
    log.info("created Delta table %s over an empty _delta_log", ref.text)


def _describe(spark: SparkSession, ref: TableRef, comment: str, properties: dict[str, str]) -> None:
    """Sets the table comment and ``properties`` on a table just created by an append, in one
    ``ALTER TABLE`` commit; once more when another writer's first append landed under it."""
    described = {**properties, "comment": comment}
    try:
        run_alter_properties(spark, ref.sql, described)
    except Exception as exc:
        if not _lost_race(exc):
            raise
        run_alter_properties(spark, ref.sql, described)


def create_by_append(
    spark: SparkSession,
    ref: TableRef,
    kind: TableKind,
    rows: DataFrame,
    *,
    txn: Txn,
    metadata: str,
) -> bool:
    """Creates the path table ``ref`` of ``kind`` with ``rows`` as its first commit (ADR 0213):
    an append under ``txn`` (its ``userMetadata`` ``metadata``) into the empty location, the
    columns with their comments from ``kind`` (as ``CREATE TABLE`` gives them), then the table
    comment and ``kind``'s properties in an ``ALTER TABLE`` commit. Two commits, against
    ``CREATE TABLE`` and an append that must first compute the new table's state for the
    transaction's version: a new table's first write in a third of the time.

    ``False`` (nothing written) for a catalog name (a ``saveAsTable`` that creates a table
    drops the commit's ``userMetadata``), a table that exists, a column whose name needs
    column mapping, or a creation that lost the race to another writer: append as usual then
    (to the winner's table; its ``ALTER`` may land under that append, which Delta then refuses
    with a metadata change: append once more, :func:`metadata_changed`). A crash between the
    two commits leaves the table without its comment and properties (nothing reads them to
    decide).

    Raises:
        ValueError: the location holds files but no Delta table (an append would make a Delta
            table among them, where ``CREATE TABLE`` refused).
    """
    if ref.path is None or ref.exists(spark):
        return False
    if holds_other_files(spark, ref.path):
        raise ValueError(
            f"{ref.text} holds files but no Delta table: a new table is written only into an "
            "empty location (or one that does not exist). Give another target, or empty it "
            "(CONVERT TO DELTA makes a Delta table of Parquet files you mean to keep)"
        )
    columns = columns_of(rows.schema, kind.column_comments)
    if any(needs_column_mapping(name) for name, _, _ in columns):
        return False
    described = rows.select(
        *[
            rows[quote(name)].alias(name, metadata={"comment": comment} if comment else {})
            for name, _, comment in columns
        ]
    )
    try:
        ref.append(described, txn, metadata, merge_schema=True)
    except Exception as exc:
        if not _lost_race(exc):
            raise
        log.info("%s was created by another writer at the same time; appending to it", ref.text)
        return False
    _describe(spark, ref, kind.comment, kind.properties())
    log.info("created Delta table %s with its first commit", ref.text)
    return True


def ensure_table(
    spark: SparkSession,
    ref: TableRef,
    kind: TableKind,
    schema: StructType | None = None,
    *,
    seen: set[TableRef] | None = None,
) -> None:
    """Creates the table ``ref`` of ``kind`` unless it exists: the one way tables are created.

    Args:
        kind: the declaration (``schemas.BRONZE``, ``FACTS`` or ``CONTROL``): comments,
            schema version.
        schema: the columns of a bronze table (the batch's, metadata columns included), their
            comments taken from ``kind``; ``None``: ``kind``'s own columns.
        seen: tables known to exist; a table in it is not looked up, a table found or created
            is added to it.
    """
    if seen is not None and ref in seen:
        return
    if not ref.exists(spark):
        columns: Sequence[tuple[str, Any, str | None]] = (
            kind.columns if schema is None else columns_of(schema, kind.column_comments)
        )
        create_table(spark, ref, columns, kind.comment, kind.properties())
    if seen is not None:
        seen.add(ref)


def _adopt(spark: SparkSession, ref: TableRef) -> bool:
    """Waits for the table another writer is creating to be readable; False if it is not."""
    deadline, delay = time.monotonic() + ADOPT_SECONDS, 0.05
    while True:
        try:
            if ref.exists(spark):
                return True
        except Exception:  # a half-created table may not read yet
            log.debug("table %s not readable yet", ref.text, exc_info=True)
        if time.monotonic() + delay > deadline:
            return False
        time.sleep(delay)
        delay = min(delay * 2, 2.0)


def columns_of(schema: StructType, comments: dict[str, str]) -> list[tuple[str, Any, str | None]]:
    """``(name, DataType, comment)`` of every field of ``schema``, comments looked up by name."""
    return [(f.name, f.dataType, comments.get(f.name)) for f in schema.fields]
