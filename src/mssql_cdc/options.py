"""The data sources' options: one declaration per option (docs/data-sources.md#options).

Each option is declared once, as a field of :class:`ReaderOptions`: its attribute name and type
(the annotation), its documented name, its value kind (how the text is read and what is
allowed, :mod:`mssql_cdc.option_kinds`), its default, which source reads it and its doc line.
:data:`OPTIONS` collects the declarations; :func:`parse_options`, the error messages, the
docs' Options table (:func:`markdown_table`, ``scripts/options_table.py``) and the tests are
driven by it. ``SourceOptions`` (a ``TypedDict`` for type checkers) lists the same names; a
test keeps the two equal.

Rules: names match ignoring case (Spark lower-cases them); an unknown name is warned about by
each ``stream()`` and by each query the stream data source starts (:func:`warn_unknown`,
logger ``mssql_cdc.options``; the first micro-batch's facts ``detail.warnings`` keep it); a bad
value is a ``ValueError`` naming the option, the value and what is allowed; the secrets
(``password``, ``accessToken`` and the connection string, which may hold ``PWD=``) never appear
in a ``repr``, a log line or an error message. An option accepted for compatibility that has no
effect yet is declared ``inert``: giving it logs a WARNING once per process, and the docs say
so; no option silently does nothing.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Literal, TypedDict, TypeVar, cast, overload

from mssql_cdc._native import Lsn
from mssql_cdc.connection_string import password_is_entra_secret
from mssql_cdc.option_kinds import (
    BOOL,
    CAPTURE_INSTANCE,
    ENDING_LSN,
    LSN,
    OPTIONAL_TEXT,
    SNAPSHOT_CHUNKS,
    SNAPSHOT_KEYS,
    STARTING_LSN,
    TEXT,
    TIME_ZONE,
    TOKEN_PROVIDER,
    EndingLsn,
    Kind,
    RefusedError,
    StartingLsn,
    between,
    choice,
    count,
    count_or_auto,
    non_negative,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "MAX_NUM_PARTITIONS",
    "OPTIONS",
    "OPTION_NAMES",
    "Option",
    "ReaderOptions",
    "SourceOptions",
    "markdown_table",
    "parse_options",
    "snapshot_read_options",
    "warn_unknown",
]

log = logging.getLogger("mssql_cdc.options")

T = TypeVar("T")
ReadBy = Literal["both", "stream", "snapshot"]
Isolation = Literal["readCommitted", "snapshot"]
SchemaChangePolicy = Literal["classify", "fail"]

#: at most how many ranges one batch is split into (each is a task and a SQL Server connection)
MAX_NUM_PARTITIONS = 4096
#: the default and the bounds of ``maxRowBytes`` (ADR 0125)
DEFAULT_MAX_ROW_BYTES = 256 << 20
_MIN_ROW_BYTES = 1 << 20
_MAX_ROW_BYTES = 2**31 - 1
_KEY = "mssql_cdc.option"
_POLICY: Kind[SchemaChangePolicy] = choice("classify", "fail")
_ISOLATION: Kind[Isolation] = choice("readCommitted", "snapshot")


@dataclass(frozen=True)
class Option(Generic[T]):
    """One option's declaration (see the module doc).

    Attributes:
        name: the documented spelling (matched ignoring case).
        kind: how the value is read and what is allowed.
        default_doc: the default as the docs table shows it (``required`` when required).
        read_by: which data source reads it.
        doc: the docs table's line (Markdown).
        required: a blank or missing value is ``Option '<name>' is required``.
        secret: never shown in a ``repr``, a log line or an error.
        inert: why the option has no effect yet (a WARNING when given); ``None``: in effect.
        attr: the :class:`ReaderOptions` attribute holding the parsed value.
    """

    name: str
    kind: Kind[T]
    default_doc: str
    read_by: ReadBy
    doc: str
    required: bool = False
    secret: bool = False
    inert: str | None = None
    attr: str = ""

    def refuse(self, value: str) -> ValueError:
        """The error for ``value``, naming the option and what is allowed."""
        shown = "<hidden>" if self.secret else repr(value)
        allowed = self.kind.allowed
        return ValueError(f"Option {self.name!r} has the value {shown}; allowed: {allowed}")


class _Flags(TypedDict, total=False):
    """:class:`Option`'s flags as :func:`_option` takes them (keyword arguments)."""

    secret: bool
    inert: str | None


@overload
def _option(
    name: str,
    kind: Kind[T],
    *,
    default: T,
    default_doc: str,
    read_by: ReadBy,
    doc: str,
    **flags: Unpack[_Flags],
) -> T: ...
@overload
def _option(
    name: str,
    kind: Kind[T],
    *,
    default: None,
    default_doc: str,
    read_by: ReadBy,
    doc: str,
    **flags: Unpack[_Flags],
) -> T | None: ...
def _option(
    name: str,
    kind: Kind[T],
    *,
    default: T | None,
    default_doc: str,
    read_by: ReadBy,
    doc: str,
    **flags: Unpack[_Flags],
) -> T | None:
    """A field declaring one option (the arguments are :class:`Option`'s attributes; ``secret``
    and ``inert`` among ``flags``)."""
    secret = flags.get("secret", False)
    spec = Option(name, kind, default_doc, read_by, doc, secret=secret, inert=flags.get("inert"))
    return field(default=default, repr=not secret, metadata={_KEY: spec})


def _required(name: str, kind: Kind[T], *, read_by: ReadBy, doc: str, secret: bool = False) -> T:
    """A field declaring a required option (no default; blank is refused)."""
    spec = Option(name, kind, "required", read_by, doc, required=True, secret=secret)
    return cast(T, field(repr=not secret, metadata={_KEY: spec}))


@dataclass(frozen=True)
class ReaderOptions:
    """The parsed options, one field per option (the declaration); secrets are left out of
    ``repr``. Built by :func:`parse_options`."""

    connection_string: str = _required(
        "connectionString",
        TEXT,
        read_by="both",
        secret=True,
        doc="ODBC-style string for the native client (see [native-client.md](native-client.md))",
    )
    capture_instance: str = _required(
        "captureInstance",
        CAPTURE_INSTANCE,
        read_by="both",
        doc="the capture instance; its table's newer instance is followed from its `start_lsn`, "
        "and the table's default name (`<schema>_<table>`) still finds the newest instance once "
        "the old one is disabled ([Schema changes](schema-changes.md))",
    )
    user: str | None = _option(
        "user",
        TEXT,
        default=None,
        default_doc="from the connection string",
        read_by="both",
        doc="SQL login, kept out of the connection string",
    )
    password: str | None = _option(
        "password",
        TEXT,
        default=None,
        default_doc="from the connection string",
        read_by="both",
        secret=True,
        doc="the SQL login's password (`stream()` moves a `PWD=` of the connection string here)",
    )
    access_token: str | None = _option(
        "accessToken",
        TEXT,
        default=None,
        default_doc="none",
        read_by="both",
        secret=True,
        doc="Microsoft Entra ID access token (it expires: for a long stream use "
        "`accessTokenProvider`)",
    )
    access_token_provider: str | None = _option(
        "accessTokenProvider",
        TOKEN_PROVIDER,
        default=None,
        default_doc="none",
        read_by="both",
        doc="called for a fresh Entra ID access token for each new connection, on the driver "
        "and the executors: `azure-identity` (`DefaultAzureCredential`, needs the "
        "`azure-identity` package) or `module:callable` returning the token text; overrides "
        "`accessToken`, see [streaming.md](streaming.md#entra-id-access-tokens)",
    )
    connect_timeout: int = _option(
        "connectTimeout",
        non_negative(),
        default=30,
        default_doc="`30`",
        read_by="both",
        doc="login timeout, seconds",
    )
    query_timeout: int | None = _option(
        "queryTimeout",
        count(),
        default=None,
        default_doc="none",
        read_by="both",
        doc="seconds: a deadline for each whole query, from sending it to its last byte (not an "
        "idle timeout); when passed the query fails with `TimeoutError` and its connection closes",
    )
    max_row_bytes: int = _option(
        "maxRowBytes",
        between(_MIN_ROW_BYTES, _MAX_ROW_BYTES),
        default=DEFAULT_MAX_ROW_BYTES,
        default_doc="`268435456` (256 MiB)",
        read_by="both",
        doc="the most bytes of one row (so of one value) the reader holds in memory; a larger "
        "row fails the query with `ProtocolError` naming this option, see "
        "[reliability.md](reliability.md#hostile-input)",
    )
    lock_timeout_ms: int | None = _option(
        "lockTimeoutMs",
        non_negative(),
        default=None,
        default_doc="unset (wait)",
        read_by="snapshot",
        doc="`SET LOCK_TIMEOUT` on every connection that reads the table, planning included "
        "(error 1222 when passed)",
    )
    source_time_zone: str = _option(
        "sourceTimeZone",
        TIME_ZONE,
        default="auto",
        default_doc="`auto`",
        read_by="both",
        doc="the server clock: `auto` = `CURRENT_TIMEZONE_ID()` (else the current UTC offset, "
        "with a WARNING), or a Windows zone name",
    )
    columns: str | None = _option(
        "columns",
        OPTIONAL_TEXT,
        default=None,
        default_doc="inferred",
        read_by="both",
        doc="Spark DDL of the captured columns to read (`id INT, amount DECIMAL(18,2)`)",
    )
    include_command_id: bool = _option(
        "includeCommandId",
        BOOL,
        default=True,
        default_doc="`true`",
        read_by="both",
        doc="read `__$command_id` (from the change table) into `_command_id`; `false` only for "
        "a change table without it",
    )
    starting_lsn: StartingLsn = _option(
        "startingLsn",
        STARTING_LSN,
        default="earliest",
        default_doc="`earliest`",
        read_by="stream",
        doc="new checkpoints and batch reads only: `earliest`, `latest`, or an LSN taken as "
        "already processed",
    )
    ending_lsn: EndingLsn = _option(
        "endingLsn",
        ENDING_LSN,
        default="latest",
        default_doc="`latest`",
        read_by="stream",
        doc="batch reads (`spark.read`) only: the last LSN read, `latest` = the newest commit "
        "when the read is planned; see [data-sources.md](data-sources.md#changes-as-a-batch)",
    )
    max_commits_per_batch: int | None = _option(
        "maxCommitsPerBatch",
        count(),
        default=None,
        default_doc="unlimited",
        read_by="stream",
        doc="commits per micro-batch; Spark 4.2+, no effect (one WARNING per query) on 4.0/4.1, "
        "see [compatibility.md](compatibility.md)",
    )
    num_partitions: int | None = _option(
        "numPartitions",
        count_or_auto(MAX_NUM_PARTITIONS),
        default=None,
        default_doc="`auto`",
        read_by="both",
        doc="at most this many ranges, each on its own connection; `auto` = the registering "
        "session's cores",
    )
    arrow_batch_size: int = _option(
        "arrowBatchSize",
        count(),
        default=10000,
        default_doc="`10000`",
        read_by="both",
        doc="rows per Arrow batch",
    )
    fail_on_data_loss: bool = _option(
        "failOnDataLoss",
        BOOL,
        default=True,
        default_doc="`true`",
        read_by="stream",
        doc="`false` skips purged changes with a WARNING and a `data_skipped` event",
    )
    schema_change_policy: SchemaChangePolicy = _option(
        "schemaChangePolicy",
        _POLICY,
        default="classify",
        default_doc="`classify`",
        read_by="stream",
        doc="what DDL inside a batch does: `classify` fails the batch before it reads only on a "
        "captured column whose new type the query's type cannot hold (restart to re-infer), "
        "other DDL goes on with a WARNING and a `schema_change` event; `fail` fails on any DDL "
        "([Schema changes](schema-changes.md))",
    )
    metrics_path: str | None = _option(
        "metricsPath",
        OPTIONAL_TEXT,
        default=None,
        default_doc="none",
        read_by="stream",
        doc="directory for per-partition metrics and event files (`mssql_cdc._metrics`)",
    )
    snapshot_lsn: Lsn | None = _option(
        "snapshotLsn",
        LSN,
        default=None,
        default_doc="`max_lsn` before the read",
        read_by="snapshot",
        doc="LSN stamped on snapshot rows",
    )
    snapshot_chunks: tuple[tuple[int, object, object], ...] | None = _option(
        "snapshotChunks",
        SNAPSHOT_CHUNKS,
        default=None,
        default_doc="none",
        read_by="snapshot",
        doc="read only these `[chunk, lo, hi]` key ranges (`lo` inclusive, `hi` exclusive, a "
        "scalar or a list for a composite key, `null` = open), one partition each, and add "
        "`_chunk INT`; with `metricsPath` each chunk writes `chunk-<i>.json` (rows, bytes, "
        "seconds, `max_lsn` after its read)",
    )
    snapshot_keys: tuple[str, ...] | None = _option(
        "snapshotKeys",
        SNAPSHOT_KEYS,
        default=None,
        default_doc="the capture instance's unique index",
        read_by="snapshot",
        doc="key columns for ranges and chunk bounds",
    )
    isolation_level: Isolation = _option(
        "isolationLevel",
        _ISOLATION,
        default="readCommitted",
        default_doc="`readCommitted`",
        read_by="snapshot",
        doc="the snapshot read's isolation level; never NOLOCK",
    )
    #: option names given that no source reads (as given); not an option
    unknown: tuple[str, ...] = ()

    def __getstate__(self) -> dict[str, Any]:
        """What a pickle holds (a reader copied into Spark's tasks): everything but an Entra ID
        secret (``Authentication=ActiveDirectoryServicePrincipal`` / ``...Password``), which
        stays on the driver; the tasks log in with the token their partition carries
        (mssql_cdc.source.entra, ADR 0189). A SQL login's password is kept: the tasks need it."""
        state = dict(self.__dict__)
        if state.get("password") is not None and password_is_entra_secret(self.connection_string):
            state["password"] = None
        return state


def _declared() -> tuple[Option[Any], ...]:
    out = []
    for f in dataclasses.fields(ReaderOptions):
        spec = f.metadata.get(_KEY)
        if spec is not None:
            out.append(dataclasses.replace(spec, attr=f.name))
    return tuple(out)


#: every option, in declaration order
OPTIONS: tuple[Option[Any], ...] = _declared()
#: documented spellings, by lower-cased name
OPTION_NAMES: dict[str, str] = {o.name.lower(): o.name for o in OPTIONS}
_BY_NAME: dict[str, Option[Any]] = {o.name.lower(): o for o in OPTIONS}


class SourceOptions(TypedDict, total=False):
    """Every option of ``format("mssql_cdc")`` and ``format("mssql_cdc_snapshot")`` in its
    documented spelling, all values strings (as Spark passes them), for type checkers. Only
    ``connectionString`` and ``captureInstance`` are required. (The declaration is
    :class:`ReaderOptions`; a test keeps these names equal to it.)"""

    connectionString: str
    captureInstance: str
    user: str
    password: str
    accessToken: str
    accessTokenProvider: str
    connectTimeout: str
    queryTimeout: str
    maxRowBytes: str
    lockTimeoutMs: str
    sourceTimeZone: str
    columns: str
    includeCommandId: str
    startingLsn: str
    endingLsn: str
    maxCommitsPerBatch: str
    numPartitions: str
    arrowBatchSize: str
    failOnDataLoss: str
    schemaChangePolicy: str
    metricsPath: str
    snapshotLsn: str
    snapshotChunks: str
    snapshotKeys: str
    isolationLevel: str


_warned: set[str] = set()
_warned_lock = threading.Lock()


def _first_time(keys: list[str]) -> list[str]:
    """The ``keys`` not warned about before in this process (case-insensitive), now marked."""
    with _warned_lock:
        fresh = [k for k in keys if k.lower() not in _warned]
        _warned.update(k.lower() for k in fresh)
    return fresh


def warn_unknown(options: ReaderOptions) -> None:
    """Logs one WARNING (logger ``mssql_cdc.options``) naming ``options.unknown``, if any, and
    the known options; every call logs, so each ``stream()`` and each stream a data source
    starts says it (a typo in a second notebook cell is not silent). Called by ``stream()`` in
    the caller's process and by the stream data source when it starts a query, where the run's
    :class:`~mssql_cdc.source.run_warnings.RunWarnings` carry it to the first micro-batch's
    facts ``detail.warnings``."""
    if options.unknown:
        log.warning(
            "mssql_cdc ignores unknown option(s) %s; known options: %s",
            ", ".join(options.unknown),
            ", ".join(sorted(OPTION_NAMES.values())),
        )


def _warn_inert(spec: Option[Any]) -> None:
    if spec.inert is not None and _first_time([f"inert:{spec.name}"]):
        log.warning(
            "option %s is accepted for compatibility and has no effect yet: %s",
            spec.name,
            spec.inert,
        )


def parse_options(raw: Mapping[str, str]) -> ReaderOptions:
    """Validate ``raw`` (any mapping of option names to strings) into :class:`ReaderOptions`.

    Runs on the driver, once per data source instance (and in tests). Unknown names are kept
    in ``unknown`` (:func:`warn_unknown` logs them); options that have no effect yet are warned
    about once per process.

    Raises
    ------
    ValueError
        A required option is missing or a value is not allowed; the message names the option,
        the value (``<hidden>`` for secrets) and what is allowed.
    """
    given: dict[str, str] = {}
    unknown: list[str] = []
    for key, value in raw.items():
        spec = _BY_NAME.get(key.lower())
        if spec is None:
            unknown.append(key)
        else:
            given[spec.name] = "" if value is None else str(value)
    for spec in OPTIONS:
        if spec.required and not given.get(spec.name, "").strip():
            raise ValueError(f"Option {spec.name!r} is required")
    values: dict[str, Any] = {"unknown": tuple(sorted(unknown))}
    for spec in OPTIONS:
        if spec.name not in given:
            continue
        text = given[spec.name]
        try:
            values[spec.attr] = spec.kind.parse(text)
        except RefusedError:
            raise spec.refuse(text) from None
        _warn_inert(spec)
    return ReaderOptions(**values)


def snapshot_read_options(raw: Mapping[str, str]) -> dict[str, str]:
    """The data source options a snapshot read (``format("mssql_cdc_snapshot")``) of a stream
    takes: the stream's, without ``metricsPath`` and ``startingLsn`` (names matched ignoring
    case)."""
    dropped = {"metricspath", "startinglsn"}
    return {k: v for k, v in raw.items() if k.lower() not in dropped}


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def markdown_table() -> str:
    """The docs' Options table (docs/data-sources.md), one row per declared option."""
    lines = [
        "| Option | Default | Allowed | Read by | Meaning |",
        "|---|---|---|---|---|",
    ]
    for o in OPTIONS:
        lines.append(
            f"| `{o.name}` | {_cell(o.default_doc)} | {_cell(o.kind.allowed)} | {o.read_by} | "
            f"{_cell(o.doc)} |"
        )
    return "\n".join(lines) + "\n"
