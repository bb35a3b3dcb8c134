"""Golden spellings of every ``txnAppId`` and ``txnVersion`` rule (``sink.ledger.ids``): existing
tables and checkpoints hold these exact strings, so a change here is a silent duplicate or a
lost commit. Pure, no Spark."""

from __future__ import annotations

import pytest

from mssql_cdc.sink.ledger import ids
from mssql_cdc.sink.tables import Txn

S = "0x0000002A000000010001"


@pytest.mark.parametrize(
    ("txn", "expected"),
    [
        # generation 0: the sink id is the app_id
        (ids.micro_batch("orders", 7), ("orders", 7)),
        (ids.batch_facts("orders", 7), ("orders#facts", 7)),
        (ids.bootstrap("orders"), ("orders#events", 0)),
        (ids.next_owned("orders", -1), ("orders#events", 0)),
        (ids.next_owned("orders", 3), ("orders#events", 4)),
        (ids.next_owned(None, -1), ("mssql_cdc#snapshot", 0)),
        (ids.next_owned(None, 1), ("mssql_cdc#snapshot", 2)),
        (ids.switch("orders", 12), ("orders#switch", 12)),
        (ids.chunked_open("orders", 0), ("orders#snapshots", 0)),
        (ids.chunk_plan("orders", S), (f"orders#snapplan.{S}", 0)),
        (ids.chunk_wave("orders", S, 5), (f"orders#snapchunks.{S}", 5)),
        (ids.chunk_facts("orders", S, 3), (f"orders#snapchunks.{S}", 3)),
        # generation 2: micro-batches, switch, plan and waves use the generation's sink id;
        # the re-snapshot and the chunked open the user's app_id
        (ids.micro_batch(ids.sink_id("orders", 2), 0), ("orders.g2", 0)),
        (ids.batch_facts(ids.sink_id("orders", 2), 0), ("orders.g2#facts", 0)),
        (ids.switch(ids.sink_id("orders", 2), 3), ("orders.g2#switch", 3)),
        (ids.resnapshot("orders", 2), ("orders#events", 2)),
        (ids.chunked_open("orders", 2), ("orders#snapshots", 2)),
        (ids.chunk_plan(ids.sink_id("orders", 2), S), (f"orders.g2#snapplan.{S}", 0)),
        (ids.chunk_wave(ids.sink_id("orders", 2), S, 0), (f"orders.g2#snapchunks.{S}", 0)),
    ],
)
def test_every_commit_kind_spells_its_transaction_as_existing_tables_hold_it(txn, expected):
    assert isinstance(txn, Txn)
    assert (txn.app_id, txn.version) == expected


def test_the_ids_read_back_are_the_ids_written():
    assert ids.bronze_id("orders.g1") == ids.micro_batch("orders.g1", 0).app_id == "orders.g1"
    assert ids.facts_id("orders") == ids.batch_facts("orders", 0).app_id == "orders#facts"
    assert ids.events_id("orders") == ids.bootstrap("orders").app_id == "orders#events"
    assert ids.switch_id("orders") == ids.switch("orders", 1).app_id == "orders#switch"
    assert ids.chunk_wave_id("a", S) == ids.chunk_wave("a", S, 1).app_id == f"a#snapchunks.{S}"
    assert ids.owned_id("orders") == "orders#events"
    assert ids.owned_id(None) == ids.ANONYMOUS_OWNER == "mssql_cdc#snapshot"
    assert (ids.owner("orders"), ids.owner(None)) == ("orders", "mssql_cdc#snapshot")
    assert ids.BOOTSTRAP_VERSION == 0


def test_generation_numbers_and_sink_ids():
    assert [ids.sink_id("orders", n) for n in (0, 1, 12)] == ["orders", "orders.g1", "orders.g12"]
    assert ids.stream_of("orders.g12", 12) == "orders"
    assert ids.stream_of("orders.g12", 0) == "orders.g12"
    assert [ids.stream_of_sink(s) for s in ("orders.g3", "orders", "orders.g", "a.gx")] == [
        "orders",
        "orders",
        "orders.g",
        "a.gx",
    ]
    assert ids.generations_regex("a.b") == r"^a\.b\.g[0-9]+$"
    # numbering: above the live generation and every re-snapshot bronze records
    assert ids.next_generation(0, -1) == 1
    assert ids.next_generation(1, 3) == 4
    assert ids.next_generation(5, 2) == 6
    assert ids.resnapshot_generation(2, 1) == 2  # none of generation 2 appended yet
    assert ids.resnapshot_generation(2, 2) == 3  # generation 2's appended: one further
    with pytest.raises(ValueError, match="generation 1 or later"):
        ids.resnapshot("orders", 0)
