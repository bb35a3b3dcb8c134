"""The query behind ``maxCommitsPerBatch`` (``CdcClient.nth_commit``: the n-th commit after an
LSN, capped) against the test server.

Found by the fault harness (issue 37, ``make chaos TRIALS=1 SEED=2 KINDS=all``): on the
emulator every micro-batch planned with ``maxCommitsPerBatch`` failed in ``latestOffset`` with
error 40517 ("MAX of an expression of a type the emulator does not know"), since the emulator
types only functions over columns it knows (ADR 0195) and does not type ``MAX`` over a column of
a derived table (``SELECT MAX(x.start_lsn) FROM (SELECT TOP (@P3) start_lsn ...) AS x``). SQL
Server answers it; a stream with ``maxCommitsPerBatch`` against the emulator never gets past
its first batch. The emulator now types a derived table's column by its select list."""

from __future__ import annotations

from mssql_cdc.options import parse_options
from mssql_cdc.source.client import CdcClient


def test_the_nth_commit_after_an_lsn_is_the_nth_commit_or_the_cap(source):
    for i in range(4):
        source.sql(f"INSERT INTO dbo.orders VALUES ({i}, N'n', {i})")
    source.scan()
    client = CdcClient(parse_options(source.options()))
    try:
        last = client.max_commit()
        assert last is not None
        commits = client.commits_between(client.min_lsn("dbo_orders"), last.lsn)
        assert len(commits) >= 4
        first = commits[0].lsn
        assert client.nth_commit(first, 2, last.lsn) == commits[2]
        assert client.nth_commit(first, 100, last.lsn) == commits[-1]  # fewer: the last one
        assert client.nth_commit(first, 1, commits[1].lsn) == commits[1]
    finally:
        client.close()
