"""Reconcile's bucketing rules (docs/validation.md, "How buckets are made"): pure Python, no
Spark, no server.

A single integer or ``date`` key is compared in ranges. Each key value becomes a *unit*: the
integer itself, or a date's day number from 1970-01-01. The source's ``MIN..MAX`` units are cut
into at most :data:`FINE_BUCKETS` fine buckets of equal width (:class:`Grid`); the server and
Spark count rows and sum units per fine bucket, and the driver merges consecutive fine buckets
into buckets of about ``bucket_rows`` source rows (:func:`merge`). The first bucket is open
below and the last open above, so a silver key outside the source's range (or a NULL key, which
sorts first) still lands in a bucket. Any other key is compared as one whole-table bucket.
"""

from __future__ import annotations

import bisect
import datetime as dt
import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal

__all__ = [
    "FINE_BUCKETS",
    "Bucket",
    "Grid",
    "bound_json",
    "bucket_of",
    "check_arguments",
    "check_keys",
    "grid",
    "key_json",
    "key_kind",
    "key_unit",
    "merge",
    "sampled",
    "unit_value",
]

#: the most fine buckets one key range is cut into
FINE_BUCKETS = 100_000
_EPOCH = dt.date(1970, 1, 1)
_INTEGER_TYPES = frozenset({"tinyint", "smallint", "int", "bigint"})


def key_kind(data_types: Sequence[str]) -> str | None:
    """``"int"`` or ``"date"`` for a single key column of that SQL Server type (lower case),
    ``None`` for a key compared whole-table (composite, strings, other types)."""
    if len(data_types) != 1:
        return None
    if data_types[0] in _INTEGER_TYPES:
        return "int"
    if data_types[0] == "date":
        return "date"
    return None


def key_unit(value: object, kind: str) -> int | None:
    """The unit of a key value: the integer, or a date's days since 1970-01-01."""
    if value is None:
        return None
    if kind == "date":
        assert isinstance(value, dt.date)
        return (value - _EPOCH).days
    return int(str(value))


def unit_value(unit: int, kind: str) -> int | str:
    """The key value of a unit, as JSON and the snapshot reader's bounds take it (a date as
    ISO text)."""
    if kind == "date":
        return (_EPOCH + dt.timedelta(days=unit)).isoformat()
    return unit


def bound_json(unit: int | None, kind: str | None) -> str | None:
    """A bucket bound for the report (``None``: open)."""
    if unit is None or kind is None:
        return None
    return json.dumps(unit_value(unit, kind))


@dataclass(frozen=True)
class Grid:
    """Fine buckets of ``width`` units from ``lo``; ``count`` of them cover the source's
    range."""

    lo: int
    width: int
    count: int

    def fine(self, unit: int | None) -> int:
        """The fine bucket of a unit, clamped into the grid (``None``, a NULL key: the first)."""
        if unit is None:
            return 0
        return min(max((unit - self.lo) // self.width, 0), self.count - 1)

    def start(self, fine: int) -> int:
        """The first unit of fine bucket ``fine``."""
        return self.lo + fine * self.width


def grid(lo: int | None, hi: int | None, fine_buckets: int = FINE_BUCKETS) -> Grid:
    """The grid over units ``lo..hi`` (an empty table: one bucket at 0)."""
    if lo is None or hi is None:
        return Grid(0, 1, 1)
    span = hi - lo + 1
    width = max(1, -(-span // fine_buckets))
    return Grid(lo, width, (hi - lo) // width + 1)


@dataclass(frozen=True)
class Bucket:
    """Fine buckets ``first`` up to (not including) ``end``; ``lo``/``hi`` the unit bounds
    (``lo`` inclusive, ``hi`` exclusive, ``None`` open)."""

    index: int
    first: int
    end: int
    lo: int | None
    hi: int | None


def merge(g: Grid, source_rows: Mapping[int, int], bucket_rows: int) -> list[Bucket]:
    """Consecutive fine buckets merged into buckets of about ``bucket_rows`` source rows: a
    bucket ends after the fine bucket that brings it to ``bucket_rows`` or more. The first is
    open below, the last open above."""
    cuts: list[int] = []
    held = 0
    for fine in sorted(source_rows):
        held += source_rows[fine]
        if held >= bucket_rows and fine + 1 < g.count:
            cuts.append(fine + 1)
            held = 0
    starts = [0, *cuts]
    ends = [*cuts, g.count]
    return [
        Bucket(
            i,
            first,
            end,
            None if i == 0 else g.start(first),
            None if i == len(starts) - 1 else g.start(end),
        )
        for i, (first, end) in enumerate(zip(starts, ends, strict=True))
    ]


def bucket_of(buckets: Sequence[Bucket], fine: int) -> int:
    """The index of the bucket holding fine bucket ``fine``."""
    return bisect.bisect_right([b.first for b in buckets], fine) - 1


def sampled(candidates: Sequence[int], sample: float, seed: int | None) -> set[int]:
    """The matching buckets tier 2 also hashes: each with probability ``sample`` (``1``: all,
    ``0``: none), drawn from ``random.Random(seed)``, so a seed repeats the choice."""
    rng = random.Random(seed)
    return {i for i in candidates if rng.random() < sample}


def _jsonable(value: object) -> object:
    if isinstance(value, (dt.date, dt.datetime, dt.time)):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "0x" + bytes(value).hex().upper()
    return value


def key_json(names: Sequence[str], values: Sequence[object]) -> str:
    """A key as a JSON object in key order; a NULL component is named (``{"code": null}``);
    dates and times as ISO text, decimals as text, binary as ``0x`` hex."""
    return json.dumps(
        {n: _jsonable(v) for n, v in zip(names, values, strict=True)}, ensure_ascii=False
    )


def check_arguments(bucket_rows: object, sample: object, seed: object) -> None:
    """``ValueError`` / ``TypeError`` for a bad ``bucket_rows``, ``sample`` or ``seed``."""
    if isinstance(bucket_rows, bool) or not isinstance(bucket_rows, int):
        raise TypeError(f"bucket_rows must be an int >= 1, got {type(bucket_rows).__name__}")
    if bucket_rows < 1:
        raise ValueError(
            f"bucket_rows must be an integer >= 1 (rows per bucket), got {bucket_rows}"
        )
    if isinstance(sample, bool) or not isinstance(sample, (int, float)):
        raise TypeError(f"sample must be a number from 0 to 1, got {type(sample).__name__}")
    if not 0 <= sample <= 1:
        raise ValueError(
            f"sample must be from 0 to 1 (the fraction of matching buckets also compared row by "
            f"row; 0 none, 1 all), got {sample}"
        )
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise TypeError(f"seed must be an int or None, got {type(seed).__name__}")


def check_keys(keys: object, captured: Sequence[str], capture_instance: str) -> tuple[str, ...]:
    """The key columns: ``keys`` given, each one of ``captured`` (exact spelling first, then
    ignoring case, as SQL Server's default collation compares names)."""
    if isinstance(keys, str):
        keys = [keys]
    if not isinstance(keys, (list, tuple)) or not keys:
        raise ValueError(
            f"keys must be a non-empty list of captured column names of {capture_instance!r} "
            f"(one of {list(captured)}), got {keys!r}"
        )
    by_fold = {c.lower(): c for c in captured}
    out = []
    for key in keys:
        if not isinstance(key, str) or (key not in captured and key.lower() not in by_fold):
            raise ValueError(
                f"keys: {key!r} is not a captured column of {capture_instance!r}; allowed "
                f"values: {list(captured)}"
            )
        out.append(key if key in captured else by_fold[key.lower()])
    if len(set(out)) != len(out):
        raise ValueError(f"keys names a column twice: {list(keys)}")
    return tuple(out)
