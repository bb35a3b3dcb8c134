"""A chunked snapshot's waves applied to silver as they land, with real Spark and Delta against
the emulator: type 1 and type 2 silver on a single integer key take each wave's chunks, delete
(close) the keys a chunk's range lacks, keep a key re-inserted after the chunk's read, survive
a crash between the MERGE and the position write, and equal the table once the backfill
completes, while the table changes between waves."""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

import pytest
from _waves import WavesPipe

from cdc_source import CdcSource
from mssql_cdc.silver import apply as apply_module
from mssql_cdc.sink import read_silver_position, table_ref


class Source(CdcSource):
    base_options: ClassVar[dict[str, str]] = {"captureInstance": "dbo_k", "numPartitions": "2"}

    def rows(self) -> dict[int, int]:
        return {int(r["id"]): int(r["v"]) for r in self.sql("SELECT id, v FROM dbo.k")}


@pytest.fixture
def source(sql_server) -> Iterator[Source]:
    with Source.opened(
        sql_server, sql_server.emulator, {"k": "id int NOT NULL PRIMARY KEY, v int"}
    ) as src:
        yield src


class _CrashError(RuntimeError):
    pass


class _Pipe(WavesPipe):
    def __init__(self, spark, source: Source, tmp_path) -> None:
        super().__init__(
            spark, source, tmp_path, app_id="waves", instance="dbo_k", keys=["id"], chunk_rows=3
        )

    def current(self, scd: int) -> dict[int, int]:
        df = self.spark.read.format("delta").load(self.silver(scd))
        if scd == 2:
            df = df.where("__IS_CURRENT")
        rows = df.select("id", "v").collect()
        out = {int(r["id"]): int(r["v"]) for r in rows}
        assert len(out) == len(rows)  # one (current) row per key
        return out

    def position(self, scd: int):
        ref = table_ref(self.control, "control_table")
        return read_silver_position(self.spark, ref, table_ref(self.silver(scd), "target").text)


def _stale(spark, p: _Pipe) -> None:
    """Keys 13 and 15 in silver that the table never had: what a silver table holds after the
    deletes of a lost range (only a chunk's range delete can remove them before completion)."""
    old = "0x00000000000000000001"
    ts = "TIMESTAMP_NTZ'2020-01-01 00:00:00'"
    spark.sql(
        f"INSERT INTO delta.`{p.silver(1)}` (id, v, _start_lsn, _commit_ts) "
        f"VALUES (13, -13, '{old}', {ts}), (15, -15, '{old}', {ts})"
    )
    spark.sql(
        f"INSERT INTO delta.`{p.silver(2)}` (id, v, _start_lsn, _commit_ts, __START_AT, "
        f"__END_AT, _end_lsn, __IS_CURRENT) VALUES "
        f"(13, -13, '{old}', {ts}, {ts}, NULL, NULL, true), "
        f"(15, -15, '{old}', {ts}, {ts}, NULL, NULL, true)"
    )


def test_waves_reach_silver_as_they_land_with_range_deletes_and_crash_replay(
    spark, source, tmp_path, monkeypatch
):
    source.sql("INSERT INTO dbo.k VALUES " + ", ".join(f"({i}, {i})" for i in range(0, 29, 2)))
    p = _Pipe(spark, source, tmp_path)
    p.run()  # opens the chunked snapshot at S
    # chunks of 3 keys: [..6) [6,12) [12,18) [18,24) [24..); two chunks a wave
    assert p.wave().chunks_done == 2
    p.run()
    for scd in (1, 2):
        first = p.apply(scd)
        assert first.rebuilt
        assert first.finalized_until is None  # the snapshot is open: verdict held
        assert p.current(scd) == {k: v for k, v in source.rows().items() if k < 12}
        assert p.position(scd).snapshot_wave == 1

    # changes between waves: in a landed chunk, in chunks not read yet, above the last bound
    source.sql("UPDATE dbo.k SET v = -1 WHERE id = 0")
    source.sql("DELETE FROM dbo.k WHERE id IN (14, 16)")
    source.sql("INSERT INTO dbo.k VALUES (31, 31)")
    p.run()
    for scd in (1, 2):
        assert not p.apply(scd).rebuilt  # no chunk landed: the changes only
        now = p.current(scd)
        assert (now[0], now[31]) == (-1, 31)
    _stale(spark, p)

    assert p.wave().chunks_done == 4  # chunks [12,18) and [18,24): read after 14, 16 left
    source.sql("INSERT INTO dbo.k VALUES (16, 160)")  # re-inserted after the chunk's read
    source.sql("UPDATE dbo.k SET v = -18 WHERE id = 18")
    p.run()

    def crash(*args, **kwargs):
        raise _CrashError("after the MERGE, before the position")

    for scd in (1, 2):
        before = p.position(scd)
        monkeypatch.setattr(apply_module, "_write_position", crash)
        with pytest.raises(_CrashError):
            p.apply(scd)
        monkeypatch.undo()
        assert p.position(scd) == before  # nothing recorded: the replay applies it again
        again = p.apply(scd)
        assert not again.rebuilt
        assert p.position(scd).snapshot_wave == 3
        assert p.position(scd).open_snapshot_lsn == before.open_snapshot_lsn
        table = source.rows()
        # the keys of landed chunks are the table's: 13, 15 and 14 gone, 16 kept, 18 changed
        assert p.current(scd) == {k: v for k, v in table.items() if k < 24 or k == 31}
    history = spark.read.format("delta").load(p.silver(2)).where("id = 13").collect()
    assert [(r["__IS_CURRENT"], r["_end_lsn"] is not None) for r in history] == [(False, True)]

    source.sql("DELETE FROM dbo.k WHERE id = 26")
    source.sql("UPDATE dbo.k SET v = -2 WHERE id = 2")
    p.run()
    assert p.wave().state == "done"
    p.run()
    for scd in (1, 2):
        last = p.apply(scd)
        assert last.rebuilt  # from the complete snapshot
        assert p.current(scd) == source.rows()
        position = p.position(scd)
        assert (position.open_snapshot_lsn, position.snapshot_wave) == (None, None)
        assert position.snapshot_lsn is not None
