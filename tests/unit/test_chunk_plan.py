"""Chunked snapshots without Spark: the chunks between planned bounds, and ``backfill()``'s
argument checks (each error names the argument)."""

from __future__ import annotations

import math

import pytest

from mssql_cdc.pipeline.backfill import DEFAULT_WAVE_SECONDS, check_backfill_args
from mssql_cdc.source.chunk_plan import chunk_bounds

ARGS = {
    "chunk_rows": None,
    "max_waves": None,
    "max_seconds": None,
    "target_wave_seconds": None,
    "min_headroom_hours": None,
    "isolation": None,
}


def test_chunks_tile_the_key_space_between_bounds():
    assert chunk_bounds([]) == ((None, None),)
    assert chunk_bounds([[3], [6]]) == ((None, [3]), ([3], [6]), ([6], None))
    composite = chunk_bounds([[0, "k003"], [1, "k001"]])
    assert [c[0] for c in composite[1:]] == [c[1] for c in composite[:-1]]  # contiguous


def test_backfill_arguments_defaults_and_isolation_in_any_case():
    args = check_backfill_args(**ARGS)
    assert (args.chunk_rows, args.target_wave_seconds) == (None, DEFAULT_WAVE_SECONDS)
    chosen = check_backfill_args(**{**ARGS, "isolation": "SNAPSHOT", "target_wave_seconds": 0})
    assert (chosen.isolation, chosen.target_wave_seconds) == ("snapshot", 0.0)
    assert check_backfill_args(**{**ARGS, "isolation": "readcommitted"}).isolation == (
        "readCommitted"
    )


@pytest.mark.parametrize(
    ("name", "value", "error", "message"),
    [
        ("chunk_rows", 0, ValueError, "chunk_rows must be >= 1"),
        ("chunk_rows", 2.5, TypeError, "chunk_rows must be an int"),
        ("max_waves", True, TypeError, "max_waves must be an int"),
        ("max_seconds", 0, ValueError, "max_seconds must be a finite number > 0"),
        ("target_wave_seconds", -1, ValueError, "target_wave_seconds must be a finite"),
        ("target_wave_seconds", math.nan, ValueError, "target_wave_seconds"),
        ("min_headroom_hours", "24", TypeError, "min_headroom_hours must be a number"),
        ("isolation", "serializable", ValueError, "isolation must be 'snapshot', 'readCommitted'"),
    ],
)
def test_bad_backfill_arguments_are_refused(name, value, error, message):
    with pytest.raises(error, match=message):
        check_backfill_args(**{**ARGS, name: value})
