"""A chunked snapshot's waves applied to silver on a key without range deletes, with real Spark
and Delta against the emulator: a composite key whose second column is a ``uniqueidentifier``.
Type 1 and type 2 silver take each landed chunk in the server's key order (GUIDs ordered by
their last six bytes first), keep a key no chunk holds until the snapshot completes (only a
single integer, date or timestamp key gets range deletes), and equal the table once the
rebuild from the complete snapshot has run. Then ``reconcile`` with the facts table checks the
snapshot's chunks against bronze: none fails, until a chunk's bronze rows go missing and a
chunk's facts row is written twice."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import ClassVar

import pytest
from _waves import WavesPipe

from cdc_source import CdcSource
from mssql_cdc import reconcile
from mssql_cdc.sink import read_silver_position, table_ref

Key = tuple[int, str]


def _guid(i: int) -> str:
    """Text order descends with ``i``; SQL Server's order (last six bytes first) ascends."""
    return f"{0xFF - i:08x}-0000-0000-0000-{i:012x}"


class Source(CdcSource):
    base_options: ClassVar[dict[str, str]] = {"captureInstance": "dbo_kc", "numPartitions": "2"}

    def rows(self) -> dict[Key, int]:
        found = self.sql("SELECT a, g, v FROM dbo.kc")
        return {(int(r["a"]), str(r["g"]).lower()): int(r["v"]) for r in found}


@pytest.fixture
def source(sql_server) -> Iterator[Source]:
    columns = "a int NOT NULL, g uniqueidentifier NOT NULL, v int, PRIMARY KEY (a, g)"
    with Source.opened(sql_server, sql_server.emulator, {"kc": columns}) as src:
        yield src


class _Pipe(WavesPipe):
    def __init__(self, spark, source: Source, tmp_path) -> None:
        super().__init__(
            spark,
            source,
            tmp_path,
            app_id="waves_kc",
            instance="dbo_kc",
            keys=["a", "g"],
            chunk_rows=4,
        )

    def current(self, scd: int) -> dict[Key, int]:
        df = self.spark.read.format("delta").load(self.silver(scd))
        if scd == 2:
            df = df.where("__IS_CURRENT")
        rows = df.select("a", "g", "v").collect()
        out = {(int(r["a"]), str(r["g"]).lower()): int(r["v"]) for r in rows}
        assert len(out) == len(rows)  # one (current) row per key
        return out


def test_waves_on_a_composite_guid_key_wait_for_completion_to_delete(spark, source, tmp_path):
    # a = 0 and a = 1, six GUIDs each; chunks of 4 keys in the server's order:
    # [(0,g1)..(0,g4)] [(0,g5),(0,g6),(1,g1),(1,g2)] [(1,g3)..(1,g6)]
    source.sql(
        "INSERT INTO dbo.kc VALUES "
        + ", ".join(f"({a}, '{_guid(i)}', {10 * a + i})" for a in (0, 1) for i in range(1, 7))
    )
    p = _Pipe(spark, source, tmp_path)
    p.run()  # opens the chunked snapshot
    assert p.wave().chunks_done == 2
    p.run()
    landed = {(0, _guid(i)) for i in range(1, 7)} | {(1, _guid(1)), (1, _guid(2))}
    for scd in (1, 2):
        first = p.apply(scd)
        assert first.rebuilt
        assert first.finalized_until is None  # the snapshot is open: verdict held
        assert p.current(scd) == {k: v for k, v in source.rows().items() if k in landed}

    # a key silver holds that the table never had: no chunk of a composite key deletes it
    stale = (1, _guid(9))
    old, ts = "0x00000000000000000001", "TIMESTAMP_NTZ'2020-01-01 00:00:00'"
    p.spark.sql(
        f"INSERT INTO delta.`{p.silver(1)}` (a, g, v, _start_lsn, _commit_ts) "
        f"VALUES (1, '{stale[1]}', -9, '{old}', {ts})"
    )
    p.spark.sql(
        f"INSERT INTO delta.`{p.silver(2)}` (a, g, v, _start_lsn, _commit_ts, __START_AT, "
        f"__END_AT, _end_lsn, __IS_CURRENT) VALUES "
        f"(1, '{stale[1]}', -9, '{old}', {ts}, {ts}, NULL, NULL, true)"
    )
    # changes between waves: in a landed chunk, in the chunk not read yet
    source.sql(f"UPDATE dbo.kc SET v = -1 WHERE a = 0 AND g = '{_guid(1)}'")
    source.sql(f"DELETE FROM dbo.kc WHERE a = 1 AND g = '{_guid(4)}'")
    assert p.wave().state == "done"  # the last chunk: the snapshot completes
    for scd in (1, 2):
        control = table_ref(p.control, "control_table")
        before = read_silver_position(spark, control, table_ref(p.silver(scd), "target").text)
        assert before.open_snapshot_lsn is not None
        assert stale in p.current(scd)  # still there while the snapshot was open
    p.run()
    for scd in (1, 2):
        last = p.apply(scd)
        assert last.rebuilt  # from the complete snapshot: what no chunk holds is gone
        now = p.current(scd)
        assert stale not in now
        assert now == source.rows()
        assert now[(0, _guid(1))] == -1
        assert (1, _guid(4)) not in now
    history = spark.read.format("delta").load(p.silver(2)).where(f"g = '{stale[1]}'").collect()
    assert [r["__IS_CURRENT"] for r in history] == [False]  # its version closed, not dropped

    def check():
        return reconcile(
            spark,
            source.options(),
            p.silver(1),
            keys=["a", "g"],
            bronze=p.bronze,
            control_table=p.control,
            facts_table=p.facts,
        )

    clean = check()
    assert clean.chunk_snapshot is not None
    assert (clean.match, clean.buckets, clean.failures) == (1, 1, {})
    spark.sql(f"DELETE FROM delta.`{p.bronze}` WHERE _chunk = 1")
    spark.sql(
        f"INSERT INTO delta.`{p.facts}` SELECT * FROM delta.`{p.facts}` "
        "WHERE event = 'snapshot_chunk' AND get_json_object(detail, '$.chunk') = 0"
    )
    broken = check()
    assert broken.failures == {"CHUNK_ROWS": 1, "CHUNK_TILING": 1}
    assert broken.match == 1  # silver still equals the table
    assert broken.report is not None
    rows = broken.report.where("failure_type LIKE 'CHUNK%'").orderBy("failure_type").collect()
    found = [(r["failure_type"], json.loads(r["detail"])) for r in rows]
    assert [(kind, d["chunk"], d["problem"]) for kind, d in found] == [
        ("CHUNK_ROWS", 1, "rows differ"),
        ("CHUNK_TILING", 0, "recorded more than once"),
    ]
    assert (found[0][1]["facts_rows"], found[0][1]["bronze_rows"]) == (4, 0)
    assert {d["snapshot"] for _, d in found} == {clean.chunk_snapshot}
    assert rows[0]["status"] is None
    assert rows[0]["bucket_lo"] is not None  # chunk 1's bounds
