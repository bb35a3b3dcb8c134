"""Which chunks a wave commit holds and whose it is, read from its ``userMetadata``
(``landed.newest_wave``'s rule, without Spark): waves are keyed by their first chunk, waves
written before that rule by their last; the commit is the one of this sink's snapshot that
lists the recorded version, and names the ``backfill()`` run and stamp (ADR 0200)."""

from __future__ import annotations

import json

from mssql_cdc.sink.ledger import metadata
from mssql_cdc.sink.ledger.landed import WaveCommit, _wave_commit

S = "0x0000002A00000020000E"
L = "0x0000002A000000300003"


def meta(chunks, *, sink="orders", lsn=S):
    return metadata.chunk_wave(sink, lsn, "dbo_orders", chunks, run="r1", stamp=L)


def test_a_wave_keyed_by_its_first_chunk_names_its_chunks_run_and_stamp():
    assert _wave_commit(meta([4, 5, 6]), "orders", S, 4) == WaveCommit(4, 6, "r1", L)


def test_a_wave_keyed_by_its_last_chunk_before_the_rule_is_found_too():
    assert _wave_commit(meta([4, 5, 6]), "orders", S, 6) == WaveCommit(4, 6, "r1", L)
    earlier = json.dumps(  # a wave commit's userMetadata as earlier releases wrote it
        {
            "app_id": "orders",
            "event": "snapshot_chunk",
            "snapshot_lsn": S,
            "capture_instance": "dbo_orders",
            "chunks": [4, 5, 6],
        }
    )
    assert _wave_commit(earlier, "orders", S, 6) == WaveCommit(4, 6, None, None)


def test_a_wave_of_another_sink_snapshot_or_range_is_not_the_one():
    assert _wave_commit(meta([4, 5, 6], sink="orders.g1"), "orders", S, 4) is None
    assert _wave_commit(meta([4, 5, 6], lsn=S[:-1] + "F"), "orders", S, 4) is None
    assert _wave_commit(meta([0, 1, 2]), "orders", S, 4) is None


def test_other_commits_are_not_waves():
    snapshot = metadata.snapshot("orders", "bootstrap", S, "dbo_orders", {})
    assert _wave_commit(snapshot, "orders", S, 0) is None
    assert _wave_commit(metadata.batch("orders", 4), "orders", S, 4) is None
    assert _wave_commit(None, "orders", S, 4) is None
    assert _wave_commit("not json", "orders", S, 4) is None
