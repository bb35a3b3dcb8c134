"""The pure rules behind waves and the verdict (no JVM): which keys take range deletes, how a
chunk bound is compared, and when an open snapshot is abandoned."""

from __future__ import annotations

import pytest

from mssql_cdc.silver.held import abandoned
from mssql_cdc.silver.waves import bound_text, range_key_type

pytest.importorskip("pyspark")
from pyspark.sql import types as t


@pytest.mark.parametrize(
    ("keys", "snapshot_keys", "kind", "ranged"),
    [
        (["id"], ("ID",), t.IntegerType(), True),
        (["id"], ("id",), t.LongType(), True),
        (["d"], ("d",), t.DateType(), True),
        (["ts"], ("ts",), t.TimestampNTZType(), True),
        (["ts"], ("ts",), t.TimestampType(), False),  # datetimeoffset: no range deletes
        (["id"], ("id",), t.StringType(), False),
        (["id"], ("id",), t.DecimalType(10, 0), False),
        (["a", "b"], ("a", "b"), t.IntegerType(), False),  # composite
        (["code"], ("id",), t.IntegerType(), False),  # silver keyed apart from the snapshot
    ],
)
def test_range_deletes_only_for_one_integer_date_or_timestamp_key(
    keys, snapshot_keys, kind, ranged
):
    types = dict.fromkeys(keys, kind)
    assert (range_key_type(keys, snapshot_keys, types) is not None) == ranged


def test_chunk_bounds_finer_than_a_microsecond_move_inside_the_chunk():
    assert bound_text(None, lower=True) is None
    assert bound_text(42, lower=True) == "42"
    assert bound_text("2026-03-08", lower=False) == "2026-03-08"
    assert bound_text("2026-03-08T10:00:00.123456", lower=True) == "2026-03-08T10:00:00.123456"
    assert bound_text("2026-03-08T10:00:00.1234567", lower=True) == "2026-03-08T10:00:00.123457"
    assert bound_text("2026-03-08T10:00:00.1234567", lower=False) == "2026-03-08T10:00:00.123456"
    assert bound_text("2026-03-08T10:00:00.1234560", lower=True) == "2026-03-08T10:00:00.123456"
    assert bound_text("2026-03-08 23:59:59.9999999", lower=True) == "2026-03-09T00:00:00.000000"
    with pytest.raises(ValueError, match="boolean"):
        bound_text(True, lower=True)


S, BATCH, LATER = "0x00000010000000100001", "0x00000020000000100001", "0x00000030000000100001"


def test_a_full_snapshot_is_abandoned_once_cleanup_passed_its_lsn():
    asked: list[str] = []

    def lost_after(lsn: str) -> bool:
        asked.append(lsn)
        return lsn < BATCH  # cleanup's low endpoint is just after BATCH

    assert abandoned("full", S, None, lost_after)
    assert not abandoned("full", LATER, None, lost_after)
    assert asked == [S, LATER]


def test_a_chunked_snapshot_is_abandoned_only_when_its_stream_fell_behind_cleanup():
    def lost_after(lsn: str) -> bool:
        return lsn < BATCH

    # the stream read past the cleanup: it still delivers every change after S
    assert not abandoned("chunked", S, LATER, lost_after)
    # the stream stopped before the cleanup passed its position (or recorded no batch since S)
    assert abandoned("chunked", S, S, lost_after)
    assert abandoned("chunked", S, None, lost_after)
    # cleanup has not reached S
    assert not abandoned("chunked", LATER, None, lost_after)
