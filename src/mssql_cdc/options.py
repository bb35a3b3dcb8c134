"""The data sources' options: names, defaults, validation (docs/data-sources.md#options).

Spark hands a data source its options as strings under lower-cased names; users pass them in
any case. :func:`parse_options` turns them into a frozen :class:`ReaderOptions` once, on the
driver, so every module reads typed values and no option is parsed twice.

Rules: names match ignoring case; an unknown name is warned about once per process (logger
``mssql_cdc.options``); booleans are ``true/1/yes/y`` or ``false/0/no/n`` in any case; counts
are integers of at least 1; a bad value is a ``ValueError`` naming the option, the value and
what is allowed. ``password``, ``accessToken`` and the connection string (which may hold
``PWD=``) never appear in a ``repr``, a log line or an error message.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, TypedDict

from mssql_cdc._native import Lsn
from mssql_cdc._timezones import windows_to_iana

__all__ = [
    "OPTION_NAMES",
    "ReaderOptions",
    "SourceOptions",
    "parse_options",
]

log = logging.getLogger("mssql_cdc.options")


class SourceOptions(TypedDict, total=False):
    """Every option of ``format("mssql_cdc")`` and ``format("mssql_cdc_snapshot")`` in its
    documented spelling, all values strings (as Spark passes them). Only ``connectionString``
    and ``captureInstance`` are required."""

    captureInstance: str
    connectionString: str
    user: str
    password: str
    accessToken: str
    connectTimeout: str
    lockTimeoutMs: str
    sourceTimeZone: str
    columns: str
    includeCommandId: str
    startingLsn: str
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


#: documented spellings, by lower-cased name
OPTION_NAMES: dict[str, str] = {name.lower(): name for name in SourceOptions.__annotations__}
_SECRETS = frozenset({"password", "accesstoken", "connectionstring"})
_TRUE = frozenset({"true", "1", "yes", "y"})
_FALSE = frozenset({"false", "0", "no", "n"})
_MAX_INSTANCE_NAME = 100

_warned: set[str] = set()
_warned_lock = threading.Lock()

StartingLsn = Literal["earliest", "latest"] | Lsn
Isolation = Literal["readCommitted", "snapshot"]
SchemaChangePolicy = Literal["classify", "fail"]


@dataclass(frozen=True)
class ReaderOptions:
    """The parsed options (see :func:`parse_options`); secrets are left out of ``repr``."""

    capture_instance: str
    connection_string: str = field(repr=False)
    user: str | None = None
    password: str | None = field(default=None, repr=False)
    access_token: str | None = field(default=None, repr=False)
    connect_timeout: int = 30
    lock_timeout_ms: int | None = None
    #: ``"auto"`` or a Windows time zone name (validated)
    source_time_zone: str = "auto"
    columns: str | None = None
    include_command_id: bool = True
    starting_lsn: StartingLsn = "earliest"
    max_commits_per_batch: int | None = None
    #: ``None`` = auto (the registering session's cores)
    num_partitions: int | None = None
    arrow_batch_size: int = 10000
    fail_on_data_loss: bool = True
    schema_change_policy: SchemaChangePolicy = "classify"
    metrics_path: str | None = None
    snapshot_lsn: Lsn | None = None
    snapshot_chunks: tuple[tuple[int, object, object], ...] | None = None
    snapshot_keys: tuple[str, ...] | None = None
    isolation_level: Isolation = "readCommitted"
    #: option names given that no source reads (documented spelling as given)
    unknown: tuple[str, ...] = ()


def _bad(name: str, value: str, allowed: str) -> ValueError:
    shown = "<hidden>" if name.lower() in _SECRETS else repr(value)
    return ValueError(f"Option {name!r} has the value {shown}; allowed: {allowed}")


def parse_bool(name: str, value: str) -> bool:
    """A strict boolean: ``true/1/yes/y`` or ``false/0/no/n``, any case."""
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise _bad(name, value, "true, false, 1, 0, yes, no, y or n (any case)")


_INT32_MAX = 2**31 - 1
#: at most how many ranges one batch is split into (each is a task and a SQL Server connection)
MAX_NUM_PARTITIONS = 4096
_DIGITS = re.compile(r"\+?[0-9]{1,10}")  # ASCII digits only; int32 range is checked below


def _whole_number(value: str) -> int | None:
    text = value.strip()
    return int(text) if _DIGITS.fullmatch(text) else None


def parse_count(name: str, value: str, maximum: int = _INT32_MAX) -> int:
    """An integer from 1 to ``maximum`` (ASCII digits)."""
    number = _whole_number(value)
    if number is None or not 1 <= number <= maximum:
        raise _bad(name, value, f"an integer from 1 to {maximum}")
    return number


def parse_non_negative(name: str, value: str, maximum: int = _INT32_MAX) -> int:
    """An integer from 0 to ``maximum`` (ASCII digits)."""
    number = _whole_number(value)
    if number is None or number > maximum:
        raise _bad(name, value, f"an integer from 0 to {maximum}")
    return number


def parse_lsn(name: str, value: str) -> Lsn:
    """An LSN: ``0x`` optional, up to 20 hex digits (left-padded)."""
    try:
        return Lsn.parse(value.strip())
    except ValueError:
        raise _bad(name, value, "an LSN such as 0x0000002A000001F40003") from None


def _capture_instance(value: str) -> str:
    if not value.strip():
        raise _bad("captureInstance", value, "a capture instance name")
    if len(value) > _MAX_INSTANCE_NAME or "]" in value or any(ord(ch) < 32 for ch in value):
        raise _bad(
            "captureInstance",
            value,
            "a capture instance name of at most 100 characters without ']' or control characters",
        )
    return value


def _starting_lsn(value: str) -> StartingLsn:
    lowered = value.strip().lower()
    if lowered == "earliest":
        return "earliest"
    if lowered == "latest":
        return "latest"
    try:
        return Lsn.parse(value.strip())
    except ValueError:
        raise _bad(
            "startingLsn", value, "earliest, latest, or an LSN such as 0x0000002A000001F40003"
        ) from None


def _json_list(name: str, value: str) -> list[object]:
    try:
        parsed = json.loads(value)
    except (ValueError, RecursionError):  # RecursionError: absurdly nested input
        parsed = None
    if not isinstance(parsed, list):
        raise _bad(name, value, "a JSON list")
    return parsed


def _snapshot_chunks(value: str) -> tuple[tuple[int, object, object], ...]:
    allowed = "a JSON list of [chunk, lo, hi] (lo inclusive, hi exclusive, null = open)"
    chunks = []
    for item in _json_list("snapshotChunks", value):
        if not (isinstance(item, list) and len(item) == 3 and isinstance(item[0], int)):
            raise _bad("snapshotChunks", value, allowed)
        chunks.append((item[0], item[1], item[2]))
    return tuple(chunks)


def _snapshot_keys(value: str) -> tuple[str, ...]:
    keys = _json_list("snapshotKeys", value)
    if not keys or not all(isinstance(k, str) and k for k in keys):
        raise _bad("snapshotKeys", value, 'a non-empty JSON list of column names, e.g. ["id"]')
    return tuple(str(k) for k in keys)


def _choice(name: str, value: str, choices: tuple[str, ...]) -> str:
    for choice in choices:
        if value.strip().lower() == choice.lower():
            return choice
    raise _bad(name, value, " or ".join(choices) + " (any case)")


def _time_zone(value: str) -> str:
    if value.strip().lower() == "auto":
        return "auto"
    try:
        windows_to_iana(value)
    except ValueError:
        raise _bad(
            "sourceTimeZone",
            value,
            "auto, or a Windows time zone name such as 'UTC' or 'Pacific Standard Time'",
        ) from None
    return value.strip()


def _warn_unknown(names: list[str]) -> None:
    with _warned_lock:
        fresh = [n for n in names if n.lower() not in _warned]
        _warned.update(n.lower() for n in fresh)
    if fresh:
        log.warning(
            "mssql_cdc ignores unknown option(s) %s; known options: %s",
            ", ".join(sorted(fresh)),
            ", ".join(sorted(OPTION_NAMES.values())),
        )


def parse_options(raw: Mapping[str, str]) -> ReaderOptions:  # noqa: PLR0912, PLR0915 (one branch per option)
    """Validate ``raw`` (any mapping of option names to strings) into :class:`ReaderOptions`.

    Runs on the driver, once per data source instance (and in tests). Unknown names are
    warned about once per process.

    Raises
    ------
    ValueError
        A required option is missing or a value is not allowed; the message names the option,
        the value (``<hidden>`` for secrets) and what is allowed.
    """
    given: dict[str, str] = {}
    unknown: list[str] = []
    for key, value in raw.items():
        canonical = OPTION_NAMES.get(key.lower())
        if canonical is None:
            unknown.append(key)
        else:
            given[canonical] = "" if value is None else str(value)
    if unknown:
        _warn_unknown(unknown)
    for required in ("connectionString", "captureInstance"):
        if not given.get(required, "").strip():
            raise ValueError(f"Option {required!r} is required")
    kwargs: dict[str, object] = {
        "capture_instance": _capture_instance(given["captureInstance"]),
        "connection_string": given["connectionString"],
        "unknown": tuple(sorted(unknown)),
    }
    for name, attr in (("user", "user"), ("password", "password"), ("accessToken", "access_token")):
        if name in given:
            kwargs[attr] = given[name]
    if "connectTimeout" in given:
        kwargs["connect_timeout"] = parse_non_negative("connectTimeout", given["connectTimeout"])
    if "lockTimeoutMs" in given:
        kwargs["lock_timeout_ms"] = parse_non_negative("lockTimeoutMs", given["lockTimeoutMs"])
    if "sourceTimeZone" in given:
        kwargs["source_time_zone"] = _time_zone(given["sourceTimeZone"])
    if given.get("columns", "").strip():
        kwargs["columns"] = given["columns"].strip()
    if "includeCommandId" in given:
        kwargs["include_command_id"] = parse_bool("includeCommandId", given["includeCommandId"])
    if "startingLsn" in given:
        kwargs["starting_lsn"] = _starting_lsn(given["startingLsn"])
    if "maxCommitsPerBatch" in given:
        kwargs["max_commits_per_batch"] = parse_count(
            "maxCommitsPerBatch", given["maxCommitsPerBatch"]
        )
    if "numPartitions" in given and given["numPartitions"].strip().lower() != "auto":
        text = given["numPartitions"]
        number = _whole_number(text)
        if number is None or not 1 <= number <= MAX_NUM_PARTITIONS:
            raise _bad("numPartitions", text, f"auto or an integer from 1 to {MAX_NUM_PARTITIONS}")
        kwargs["num_partitions"] = number
    if "arrowBatchSize" in given:
        kwargs["arrow_batch_size"] = parse_count("arrowBatchSize", given["arrowBatchSize"])
    if "failOnDataLoss" in given:
        kwargs["fail_on_data_loss"] = parse_bool("failOnDataLoss", given["failOnDataLoss"])
    if "schemaChangePolicy" in given:
        kwargs["schema_change_policy"] = _choice(
            "schemaChangePolicy", given["schemaChangePolicy"], ("classify", "fail")
        )
    if given.get("metricsPath", "").strip():
        kwargs["metrics_path"] = given["metricsPath"].strip()
    if "snapshotLsn" in given:
        kwargs["snapshot_lsn"] = parse_lsn("snapshotLsn", given["snapshotLsn"])
    if "snapshotChunks" in given:
        kwargs["snapshot_chunks"] = _snapshot_chunks(given["snapshotChunks"])
    if "snapshotKeys" in given:
        kwargs["snapshot_keys"] = _snapshot_keys(given["snapshotKeys"])
    if "isolationLevel" in given:
        kwargs["isolation_level"] = _choice(
            "isolationLevel", given["isolationLevel"], ("readCommitted", "snapshot")
        )
    return ReaderOptions(**kwargs)  # type: ignore[arg-type]
