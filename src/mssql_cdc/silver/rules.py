"""The pure rules of ``apply_changes``: argument checks, which bronze columns silver takes, the
order that picks a key's latest image, and the MERGE statements (docs/silver.md).

No Spark here: the statements are text over a temporary view (ADR 0061), so they are tested
without a JVM and run alike on classic Spark and Spark Connect.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from mssql_cdc.sink.ddl import quote_identifier
from mssql_cdc.sink.schemas import BRONZE, SILVER, SILVER_HISTORY

__all__ = [
    "DELETE_COLUMN",
    "METADATA_NAMES",
    "SCD_TYPES",
    "captured_columns",
    "check_keys",
    "check_scd_type",
    "check_track_columns",
    "null_safe_match",
    "order_columns",
    "scd1_merge",
    "scd2_merge",
]

#: the values of ``scd_type``
SCD_TYPES = (1, 2)
#: bronze's metadata columns (the source's and the sink's): not captured data, lower case
METADATA_NAMES = frozenset(
    {"_capture_instance", "_start_lsn", "_seqval", "_operation", "_command_id", "_commit_ts"}
    | {name for name, _, _ in BRONZE.columns}
)
#: the column of a MERGE source row that says the key's latest image is a delete
DELETE_COLUMN = "_mssql_cdc_delete"


def check_scd_type(scd_type: object) -> int:
    """``scd_type`` as an int (1 or 2; ``"1"``/``"2"`` taken too).

    Raises:
        ValueError: any other value, naming the argument and the allowed values.
    """
    text = str(scd_type).strip() if isinstance(scd_type, int | str) else None
    if isinstance(scd_type, bool) or text not in ("1", "2"):
        raise ValueError(f"scd_type must be 1 or 2, got {scd_type!r}")
    return int(text)


def captured_columns(bronze_columns: Sequence[str]) -> list[str]:
    """The captured columns of a bronze table (its columns minus the metadata ones), in
    bronze order."""
    return [c for c in bronze_columns if c.lower() not in METADATA_NAMES]


def _resolve(names: Iterable[str], captured: Sequence[str], what: str) -> list[str]:
    by_lower = {c.lower(): c for c in captured}
    out: list[str] = []
    for name in names:
        if not isinstance(name, str) or name.lower() not in by_lower:
            raise ValueError(
                f"{what}: {name!r} is not a captured column of bronze; choose from "
                f"{', '.join(captured)}"
            )
        if by_lower[name.lower()] not in out:
            out.append(by_lower[name.lower()])
    return out


def check_keys(keys: Sequence[str], captured: Sequence[str]) -> list[str]:
    """The key columns spelled as bronze spells them.

    Raises:
        ValueError: no key, or a key that is not a captured column (the choices listed).
    """
    if isinstance(keys, str):
        keys = [keys]
    if not keys:
        raise ValueError("keys is empty; give the columns that identify a row")
    return _resolve(keys, captured, "keys")


def check_track_columns(
    track_columns: Sequence[str] | None, scd_type: int, captured: Sequence[str], keys: Sequence[str]
) -> list[str]:
    """The columns whose change opens a new type 2 version: ``track_columns`` (bronze's
    spelling), or every captured column but the keys when ``None``.

    Raises:
        ValueError: ``track_columns`` with ``scd_type=1``, an empty list, or a name that is not
            a captured column.
    """
    if track_columns is None:
        return [c for c in captured if c not in keys]
    if scd_type != 2:
        raise ValueError("track_columns applies only to scd_type=2")
    if isinstance(track_columns, str):
        track_columns = [track_columns]
    if not track_columns:
        raise ValueError("track_columns is empty; leave it None to track every column")
    return [c for c in _resolve(track_columns, captured, "track_columns") if c not in keys]


def order_columns(bronze_columns: Sequence[str]) -> list[str]:
    """The columns that order a key's images, most significant first: ``_start_lsn``,
    ``_command_id`` (when bronze has it), ``_seqval``, ``_operation``."""
    names = ["_start_lsn", "_command_id", "_seqval", "_operation"]
    present = {c.lower() for c in bronze_columns}
    return [n for n in names if n in present]


def null_safe_match(keys: Sequence[str], left: str = "t", right: str = "s") -> str:
    """``t.k1 <=> s.k1 AND ...``: keys matched null-safe (a NULL in a unique key column is a
    value SQL Server allows once)."""
    return " AND ".join(
        f"{left}.{quote_identifier(k)} <=> {right}.{quote_identifier(k)}" for k in keys
    )


def _set(columns: Sequence[str]) -> str:
    return ", ".join(f"t.{quote_identifier(c)} = s.{quote_identifier(c)}" for c in columns)


def _insert(columns: Sequence[str]) -> str:
    quoted = [quote_identifier(c) for c in columns]
    return f"INSERT ({', '.join(quoted)}) VALUES ({', '.join('s.' + q for q in quoted)})"


def scd1_merge(
    target_sql: str, view: str, keys: Sequence[str], columns: Sequence[str], *, rebuild: bool
) -> str:
    """The one MERGE of a type 1 call.

    The source holds one row per key: its latest image, ``_mssql_cdc_delete`` true when that
    is a delete. Incrementally a row only takes an image newer than its own ``_start_lsn``
    (equal: the same commit replayed) and is deleted only by a delete at least as new, so a
    replay applies nothing twice and resurrects nothing. A rebuild takes every image and
    deletes the rows the source does not hold (``WHEN NOT MATCHED BY SOURCE``).

    Args:
        columns: every silver column the source sets: captured, ``_start_lsn``, ``_commit_ts``.
    """
    match = null_safe_match(keys)
    delete = f"s.{DELETE_COLUMN}"
    if rebuild:
        return (
            f"MERGE INTO {target_sql} AS t USING {view} AS s ON {match} "
            f"WHEN MATCHED AND {delete} THEN DELETE "
            f"WHEN MATCHED THEN UPDATE SET {_set(columns)} "
            f"WHEN NOT MATCHED AND NOT {delete} THEN {_insert(columns)} "
            "WHEN NOT MATCHED BY SOURCE THEN DELETE"
        )
    return (
        f"MERGE INTO {target_sql} AS t USING {view} AS s ON {match} "
        f"WHEN MATCHED AND {delete} AND t._start_lsn <= s._start_lsn THEN DELETE "
        f"WHEN MATCHED AND NOT {delete} AND t._start_lsn < s._start_lsn "
        f"THEN UPDATE SET {_set(columns)} "
        f"WHEN NOT MATCHED AND NOT {delete} THEN {_insert(columns)}"
    )


def scd2_merge(target_sql: str, view: str, keys: Sequence[str], columns: Sequence[str]) -> str:
    """The one MERGE of a type 2 call: the source holds every version the call touches, each
    identified by its key and ``_start_lsn``; an existing one is rewritten (its end, its
    untracked columns), a new one inserted.

    Args:
        columns: every column of the history table the source sets.
    """
    match = f"{null_safe_match(keys)} AND t._start_lsn = s._start_lsn"
    return (
        f"MERGE INTO {target_sql} AS t USING {view} AS s ON {match} "
        f"WHEN MATCHED THEN UPDATE SET {_set(columns)} "
        f"WHEN NOT MATCHED THEN {_insert(columns)}"
    )


def silver_columns(captured: Sequence[str], scd_type: int) -> list[str]:
    """Every column of a silver table of ``scd_type``: captured, then the declared ones."""
    kind = SILVER if scd_type == 1 else SILVER_HISTORY
    return [*captured, *kind.names]


def options_instance(capture_instance: str | None, options: Mapping[str, str] | None) -> str:
    """The capture instance: the argument, else the ``captureInstance`` option (any case).

    Raises:
        ValueError: neither given.
    """
    if capture_instance:
        return capture_instance
    for name, value in (options or {}).items():
        if name.lower() == "captureinstance" and value:
            return str(value)
    raise ValueError(
        "capture_instance is missing: pass capture_instance= or options with captureInstance"
    )
