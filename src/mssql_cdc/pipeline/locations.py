"""Where a stream keeps its files: the kind of checkpoint path and the metrics directory.

Pure Python, run on the driver by ``to_delta`` before the query starts (docs/streaming.md,
"Metrics and metricsPath"; ADR 0021):

* an explicit ``metricsPath`` is shared by streams: this one's files go to
  ``<metricsPath>/<app_id>`` (:func:`app_dir_name`: one directory per app_id); it must be a
  local or FUSE path or a URI ``pyarrow.fs`` opens,
  never ``dbfs:/`` (a ``ValueError`` before the query starts);
* without one, a stream with a facts table on a local or FUSE checkpoint uses
  ``<checkpoint>/_mssql_cdc_metrics`` (the checkpoint is the stream's own);
* a URI checkpoint (``s3://``, ``abfss://``, ``dbfs:/``, ...) gets no default: the facts keep
  their counts and the metric columns stay NULL, with one WARNING;
* without a facts table nothing would read the files, so none are written unless
  ``metricsPath`` is given.

On Databricks a checkpoint must name one place for Spark and for Python (ADR 0036): Spark
resolves a path without a scheme against DBFS (``/checkpoints/orders`` is
``dbfs:/checkpoints/orders``, ``/dbfs/x`` is ``dbfs:/dbfs/x``) while Python opens the driver's
local disk or the ``/dbfs`` mount, so only ``/Volumes/<catalog>/<schema>/<volume>/...`` (the
same Unity Catalog Volume for both) and URIs are accepted there (:func:`check_checkpoint`).
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
from collections.abc import Mapping

from mssql_cdc._metrics import metrics_dir

__all__ = [
    "DATABASE_TABLES_DIR",
    "DEFAULT_METRICS_DIR",
    "app_dir_name",
    "check_checkpoint",
    "database_metrics_paths",
    "database_table_dir",
    "is_uri",
    "metrics_base",
    "resolve_metrics_path",
]

log = logging.getLogger("mssql_cdc.pipeline")

#: the default metrics directory's name under a local or FUSE checkpoint
DEFAULT_METRICS_DIR = "_mssql_cdc_metrics"

# a scheme of two or more characters (one letter is a Windows drive)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]+:")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def is_uri(path: str) -> bool:
    """True for ``scheme:...`` paths (``s3://b/x``, ``dbfs:/x``, ``file:/x``); False for local
    and FUSE paths (``/Volumes/...``, ``/dbfs/...``, ``cp/orders``)."""
    return bool(_SCHEME.match(path))


def _is_volume(path: str) -> bool:
    parts = path.split("/")
    return len(parts) >= 5 and parts[:2] == ["", "Volumes"] and all(parts[2:5])


def check_checkpoint(checkpoint: str, *, databricks: bool) -> None:
    """Refuses, on Databricks, a checkpoint that Spark and Python would find in two places.

    Off Databricks, and for URIs (``s3://``, ``abfss://``, ``gs://``, ``dbfs:/``, ...) and
    Volume paths (``/Volumes/<catalog>/<schema>/<volume>/...``), it accepts.

    Raises:
        ValueError: on Databricks, a path without a scheme outside ``/Volumes``; the message
            names the fix.
    """
    if not databricks or is_uri(checkpoint) or _is_volume(checkpoint):
        return
    fix = (
        "use a Unity Catalog Volume, /Volumes/<catalog>/<schema>/<volume>/<dir>, which both "
        "see as the same directory (or a URI such as s3://..., abfss://..., with the "
        "metricsPath option)"
    )
    if checkpoint.startswith("/dbfs/") or checkpoint == "/dbfs":
        raise ValueError(
            f"checkpoint {checkpoint!r}: on Databricks Spark reads it as dbfs:{checkpoint} "
            f"while Python reads the /dbfs mount of dbfs:{checkpoint[len('/dbfs') :] or '/'}, "
            f"two places; {fix}"
        )
    if checkpoint.startswith("/Volumes"):
        raise ValueError(
            f"checkpoint {checkpoint!r}: a Volume path names a directory inside a volume, "
            f"/Volumes/<catalog>/<schema>/<volume>/<dir>; {fix}"
        )
    raise ValueError(
        f"checkpoint {checkpoint!r}: on Databricks Spark reads a path without a scheme on DBFS "
        "while Python reads it on the driver's local disk, where to_delta would keep the "
        f"stream's metrics directory: two places; {fix}"
    )


def _join(base: str, name: str) -> str:
    return base.rstrip("/") + "/" + name


def app_dir_name(app_id: str) -> str:
    """``app_id`` as one directory name, different for every app_id: an app_id of letters,
    digits, ``.``, ``_`` and ``-`` as it is; otherwise those other characters become ``_`` and
    ``-`` plus 8 hex digits of the app_id's SHA-256 are appended (``orders#v1`` ->
    ``orders_v1-<hash>``), so ``a#b`` and ``a_b`` never share a directory (ADR 0032)."""
    safe = _UNSAFE.sub("_", app_id)
    if safe == app_id and app_id not in (".", ".."):
        return app_id
    return f"{safe}-{hashlib.sha256(app_id.encode('utf-8')).hexdigest()[:8]}"


def metrics_base(explicit: str | None) -> str | None:
    """The ``metricsPath`` option as the base of the streams' directories: ``None`` when it is
    not given (or blank), a local path made absolute, a URI as given. Pure: nothing is opened.

    Raises:
        ValueError: a ``dbfs:/`` URI (the sink cannot open it).
    """
    if explicit is None or not explicit.strip():
        return None
    base = explicit.strip()
    if base.lower().startswith("dbfs:"):
        raise ValueError(
            f"metricsPath {base!r}: a dbfs:/ URI cannot be opened by the sink (pyarrow.fs); "
            "use the FUSE path (/dbfs/...) or a Unity Catalog Volume (/Volumes/...)"
        )
    return base if is_uri(base) else os.path.abspath(base)


def resolve_metrics_path(
    checkpoint: str, app_id: str, explicit: str | None, *, has_facts: bool
) -> str | None:
    """The metrics directory of one stream, for both the reader's ``metricsPath`` and the
    sink's ``metrics_path`` (see the module doc).

    Args:
        checkpoint: the stream's checkpoint location as given.
        app_id: the sink's id, the stream's subdirectory under an explicit ``metricsPath``.
        explicit: the ``metricsPath`` option, or ``None``.
        has_facts: whether the stream writes a facts table.

    Returns:
        The directory (an absolute local path or a URI), or ``None`` for no metrics.

    Raises:
        ValueError: ``metricsPath`` is a ``dbfs:/`` URI or a URI ``pyarrow.fs`` cannot open;
            the message names ``metricsPath`` and the fix.
    """
    base = metrics_base(explicit)
    if base is not None:
        path = _join(base, app_dir_name(app_id))
        metrics_dir(path)  # raises ValueError when pyarrow.fs cannot open it
        return path
    if not has_facts:
        return None
    if is_uri(checkpoint):
        log.warning(
            "%s: the checkpoint %s is a URI, so to_delta sets no metrics directory; the facts "
            "keep their counts but the read, retention and lag columns stay NULL: set the "
            "metricsPath option to a directory every node can write (a Volume, or a URI "
            "pyarrow.fs opens)",
            app_id,
            checkpoint,
        )
        return None
    return _join(os.path.abspath(checkpoint), DEFAULT_METRICS_DIR)


#: under a database stream's checkpoint: one directory per table (by its app_id), holding the
#: table's generation state file as a single stream's checkpoint holds it
DATABASE_TABLES_DIR = "_mssql_cdc_tables"


def database_table_dir(checkpoint: str, app_id: str) -> str:
    """Where a database stream with ``checkpoint`` keeps the generation state of its table
    ``app_id`` (the app_id the template gives, not a generation's sink id):
    ``<checkpoint>/_mssql_cdc_tables/<app_id>``. A URI checkpoint gives a URI, which the state
    file's reader takes as generation 0 (a re-snapshot needs a local checkpoint)."""
    base = checkpoint if is_uri(checkpoint) else os.path.abspath(checkpoint)
    return _join(_join(base, DATABASE_TABLES_DIR), app_dir_name(app_id))


def database_metrics_paths(
    checkpoint: str, name: str, explicit: Mapping[str, str | None]
) -> dict[str, str | None]:
    """The metrics directory of each table of a database stream ``name``, by sink id: under an
    explicit ``metricsPath`` (the table's option) ``<metricsPath>/<app_id>``, as the table's
    single stream's; else ``<checkpoint>/_mssql_cdc_metrics/<app_id>`` (the checkpoint is the
    query's, shared by its tables); ``None`` for every table without one on a URI checkpoint,
    with one WARNING for the stream.

    Args:
        explicit: each table's ``metricsPath`` option (``None``: not given), by sink id.

    Raises:
        ValueError: a ``metricsPath`` the sink cannot open (as :func:`resolve_metrics_path`).
    """
    out: dict[str, str | None] = {}
    missing: list[str] = []
    for app_id, given in explicit.items():
        base = metrics_base(given)
        if base is None and is_uri(checkpoint):
            out[app_id] = None
            missing.append(app_id)
            continue
        if base is None:
            base = _join(os.path.abspath(checkpoint), DEFAULT_METRICS_DIR)
        out[app_id] = path = _join(base, app_dir_name(app_id))
        if given is not None:
            metrics_dir(path)  # raises ValueError when pyarrow.fs cannot open it
    if missing:
        log.warning(
            "%s: the checkpoint %s is a URI, so %d table(s) get no metrics directory; their "
            "facts keep their counts but the read, retention and lag columns stay NULL and "
            "the reads' events are not recorded: set the metricsPath option to a directory "
            "the driver can write (a Volume, or a URI pyarrow.fs opens)",
            name,
            checkpoint,
            len(missing),
        )
    return out
