"""``ledger.landed.last_batch``: the newest micro-batch row of an app id, read from the newest
files when the caller knows the facts commits' ``txnVersion`` (the sink's first batch of a run,
``Ledger.decide``)."""

from __future__ import annotations

import json
from pathlib import Path

from _changes import change, changes

from mssql_cdc.sink import delta_sink, table_ref
from mssql_cdc.sink.ledger.landed import last_batch


def _added_files(facts: Path) -> list[str]:
    """The data files each commit of the facts table added, oldest commit first."""
    added = []
    for entry in sorted((facts / "_delta_log").glob("*.json")):
        for line in entry.read_text().splitlines():
            action = json.loads(line)
            if "add" in action:
                added.append(action["add"]["path"])
    return added


def test_the_newest_batch_is_found_in_the_newest_files_and_equals_the_full_read(spark, tmp_path):
    bronze, facts = tmp_path / "bronze", tmp_path / "facts"
    sink = delta_sink(str(bronze), "orders", str(facts))
    for batch in range(5):
        sink(changes(spark, [change(batch + 1, 2, batch, f"n{batch}")]), batch)
    ref = table_ref(str(facts), "facts_table")
    whole = last_batch(spark, ref, "orders")
    assert whole is not None
    assert (whole.batch_id, whole.rows, whole.max_lsn) == (4, 1, "0x" + "0" * 19 + "5")
    # the same answer from any starting point, also one past the newest (then the whole read)
    for since in (-1, 0, 3, 4, 9):
        assert last_batch(spark, ref, "orders", from_batch=since) == whole
    assert last_batch(spark, ref, "other", from_batch=4) is None

    # with every file but the newest gone, only a read narrowed to the newest files succeeds
    files = _added_files(facts)
    assert len(files) == 5
    for name in files[:-1]:
        (facts / name).unlink()
    spark.sql("CLEAR CACHE")
    assert last_batch(spark, ref, "orders", from_batch=4) == whole


def test_a_new_run_of_the_sink_reads_from_the_facts_commits_txn_version(
    spark, tmp_path, monkeypatch
):
    import mssql_cdc.sink.ledger.landed as sink_module

    asked = []
    real = sink_module.last_batch

    def recording(*args, **kwargs):
        asked.append(kwargs.get("from_batch"))
        return real(*args, **kwargs)

    monkeypatch.setattr(sink_module, "last_batch", recording)
    bronze, facts = str(tmp_path / "bronze"), str(tmp_path / "facts")
    first_run = delta_sink(bronze, "orders", facts)
    for batch in range(3):
        first_run(changes(spark, [change(batch + 1, 2, batch, "n")]), batch)
    assert asked == []  # the first batch found no facts table; the next ones were expected
    delta_sink(bronze, "orders", facts)(changes(spark, [change(9, 2, 9, "n")]), 3)
    assert asked == [2]
    assert last_batch(spark, table_ref(facts, "facts_table"), "orders").batch_id == 3
