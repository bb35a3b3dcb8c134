"""``chunk_failures``: reconcile's checks of a chunked snapshot's facts rows against bronze
(no JVM: the records and bronze's counts are built here)."""

from __future__ import annotations

import pytest

from mssql_cdc.validate.chunk_checks import ChunkRecord, chunk_failures

S = "0x00000000000000000010"


def _tiled(rows: tuple[int, ...] = (3, 3, 2), *, stamp: str = "0x00000000000000000011"):
    """Chunks [None,5) [5,9) [9,None) of the plan, the last one the plan's final chunk."""
    bounds = [(None, [5]), ([5], [9]), ([9], None)]
    return [
        ChunkRecord(n, rows[n], stamp, lo, hi, last=n == len(bounds) - 1)
        for n, (lo, hi) in enumerate(bounds)
    ]


def _found(failures):
    return [(f.failure, f.chunk, f.found.get("problem")) for f in failures]


def test_a_clean_snapshot_open_or_complete_has_no_failure():
    records = _tiled()
    assert chunk_failures(S, records, {0: 3, 1: 3, 2: 2}, complete=True) == []
    assert chunk_failures(S, records[:2], {0: 3, 1: 3}, complete=False) == []


def test_an_open_snapshots_wave_landing_between_the_reads_is_not_a_failure():
    # facts read before bronze: chunk 2's rows landed after the facts were read
    assert chunk_failures(S, _tiled()[:2], {0: 3, 1: 3, 2: 2}, complete=False) == []


def test_tiling_failures():
    lo, mid, hi = _tiled()
    twice = chunk_failures(S, [lo, mid, mid, hi], {0: 3, 1: 3, 2: 2}, complete=True)
    assert _found(twice) == [("CHUNK_TILING", 1, "recorded more than once")]
    assert twice[0].found["records"] == 2
    assert (twice[0].lo, twice[0].hi) == ([5], [9])

    missing = chunk_failures(S, [lo, hi], {0: 3, 2: 2}, complete=False)
    assert _found(missing) == [("CHUNK_TILING", 1, "missing: no facts row for this chunk")]

    shifted = ChunkRecord(0, 3, lo.stamp, [1], [5], last=False)
    assert _found(chunk_failures(S, [shifted, mid], {0: 3, 1: 3}, complete=False)) == [
        ("CHUNK_TILING", 0, "the first chunk is not open below")
    ]

    gap = ChunkRecord(1, 3, mid.stamp, [6], [9], last=False)
    found = chunk_failures(S, [lo, gap, hi], {0: 3, 1: 3, 2: 2}, complete=True)
    assert _found(found) == [("CHUNK_TILING", 1, "does not start where the previous chunk ended")]
    assert found[0].found["previous_hi"] == [5]


def test_a_complete_snapshot_must_end_with_the_plans_final_chunk():
    lo, mid, _ = _tiled()
    found = chunk_failures(S, [lo, mid], {0: 3, 1: 3}, complete=True)
    assert _found(found) == [
        (
            "CHUNK_TILING",
            1,
            "the snapshot is complete but its last chunk is not the plan's final one",
        )
    ]
    assert _found(chunk_failures(S, [], {}, complete=True))[0][:2] == ("CHUNK_TILING", None)


@pytest.mark.parametrize("complete", [False, True])
def test_rows_that_differ_from_bronze(complete):
    found = chunk_failures(S, _tiled(), {0: 3, 1: 2, 2: 2}, complete=complete)
    assert _found(found) == [("CHUNK_ROWS", 1, "rows differ")]
    assert (found[0].found["facts_rows"], found[0].found["bronze_rows"]) == (3, 2)


def test_bronze_rows_of_a_chunk_without_facts_fail_only_once_complete():
    held = {0: 3, 1: 3, 2: 2, 3: 4}
    assert chunk_failures(S, _tiled(), held, complete=False) == []
    found = chunk_failures(S, _tiled(), held, complete=True)
    assert _found(found) == [("CHUNK_ROWS", 3, "rows in bronze without a facts row")]
    assert found[0].found["bronze_rows"] == 4


def test_a_stamp_below_the_snapshot():
    found = chunk_failures(
        S, _tiled(stamp="0x0000000000000000000F"), {0: 3, 1: 3, 2: 2}, complete=True
    )
    assert [f.failure for f in found] == ["CHUNK_STAMP"] * 3
    assert found[0].found["stamp"] == "0x0000000000000000000F"
