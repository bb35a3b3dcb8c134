"""``apply_changes`` end to end against the emulator with real Spark and Delta: a randomized
workload on ``dbo.items`` streamed to bronze and applied to a type 1 and a type 2 silver table
in several calls, a crash between the MERGE and the position write, reruns, and a rebuild from
a re-snapshot taken over a gap.

The silver key is ``code``: a unique column that holds NULL once, and that updates move (the
key-changing updates). Type 1 must equal the source table row for row; type 2 must hold exactly
the versions the emulator's change history gives (each key's image as every transaction left
it, valid from its commit to the next change of its tracked columns or its delete).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import ClassVar

import pytest

from cdc_source import CdcSource
from mssql_cdc import apply_changes, finalization, stream
from mssql_cdc.silver import apply as apply_module
from mssql_cdc.silver.source import instance_info

COLUMNS = ("id", "code", "qty", "note")


class Source(CdcSource):
    base_options: ClassVar[dict[str, str]] = {"captureInstance": "dbo_items", "numPartitions": "1"}

    def sql_rows(self) -> list[tuple[object, ...]]:
        """dbo.items' current rows."""
        return [tuple(r[c] for c in COLUMNS) for r in self.sql("SELECT * FROM dbo.items")]


@pytest.fixture
def source(sql_server) -> Iterator[Source]:
    items = "id int NOT NULL PRIMARY KEY, code nvarchar(10) NULL, qty int, note nvarchar(20)"
    with Source.opened(sql_server, sql_server.emulator, {"items": items}) as src:
        yield src


class Workload:
    """Random transactions on dbo.items keeping ``code`` unique (NULL at most once)."""

    def __init__(self, source: Source, seed: int) -> None:
        self.source = source
        self.rng = random.Random(seed)
        self.rows: dict[int, list[object]] = {}
        self.next_id = 1
        self.next_code = 1

    def _code(self) -> str | None:
        if all(r[0] is not None for r in self.rows.values()) and self.rng.random() < 0.3:
            return None
        self.next_code += 1
        return f"k{self.next_code}"

    def _insert(self, code: str | None) -> str:
        i = self.next_id
        self.next_id += 1
        qty = self.rng.randint(0, 9)
        self.rows[i] = [code, qty, f"n{qty}"]
        return f"INSERT INTO dbo.items VALUES ({i}, {_lit(code)}, {qty}, N'n{qty}');"

    def _pick(self) -> int:
        return self.rng.choice(sorted(self.rows))

    def _update(self, i: int) -> str:
        qty = self.rng.randint(0, 9)
        self.rows[i][1] = qty
        note = self.rng.choice([None, "x", "y"])
        self.rows[i][2] = note
        return f"UPDATE dbo.items SET qty = {qty}, note = {_lit(note)} WHERE id = {i};"

    def _move(self, i: int) -> str:
        code = self._code()
        self.rows[i][0] = code
        return f"UPDATE dbo.items SET code = {_lit(code)} WHERE id = {i};"

    def _delete(self, i: int) -> str:
        del self.rows[i]
        return f"DELETE FROM dbo.items WHERE id = {i};"

    def transaction(self) -> str:
        kind = self.rng.choice(
            ["insert", "insert", "update", "update", "move", "delete", "busy", "reinsert"]
        )
        if kind == "insert" or len(self.rows) < 3:
            return self._insert(self._code())
        i = self._pick()
        if kind == "update":
            return self._update(i)
        if kind == "move":
            return self._move(i)
        if kind == "delete":
            return self._delete(i)
        if kind == "busy":  # several changes to one key in one transaction, the last moving it
            return self._update(i) + self._update(i) + self._move(i)
        # delete a row and insert another with its code: the key comes back in the same commit
        code = self.rows[i][0]
        return self._delete(i) + self._insert(code)

    def run(self, n: int) -> None:
        for _ in range(n):
            self.source.sql(f"BEGIN TRAN; {self.transaction()} COMMIT TRAN")
        self.source.scan()


def _raise(exc: Exception):
    def broken(*args):
        raise exc

    return broken


def _lit(value: str | None) -> str:
    return "NULL" if value is None else f"N'{value}'"


def silver_rows(spark, path, where: str | None = None) -> list[tuple[object, ...]]:
    df = spark.read.format("delta").load(str(path))
    if where:
        df = df.where(where)
    return sorted((tuple(r[c] for c in COLUMNS) for r in df.collect()), key=repr)


def expected_versions(events: list[tuple[str, dict]]) -> list[tuple[object, ...]]:
    """Type 2 versions from ``(lsn, {code: image or None})`` in LSN order, every non-key column
    tracked; a ``"snapshot"`` event's keys absent from it are closed at its LSN."""
    open_: dict[object, tuple[str, tuple]] = {}
    out: list[tuple[object, ...]] = []
    for lsn, images, whole in events:
        if whole:
            for code in [c for c in open_ if c not in images]:
                start, image = open_.pop(code)
                out.append((*image, start, lsn))
        for code, image in images.items():
            current = open_.get(code)
            if image is None:
                if current is not None:
                    out.append((*current[1], current[0], lsn))
                    del open_[code]
            elif current is None or current[1] != image:
                if current is not None:
                    out.append((*current[1], current[0], lsn))
                open_[code] = (lsn, image)
    out.extend((*image, start, None) for start, image in open_.values())
    return sorted(out, key=repr)


def history_events(source: Source) -> list[tuple[str, dict, bool]]:
    """The emulator's change history of dbo_items: each commit's last image of every code it
    touched (operation 1, and 3 not followed by the key's 4, is a delete)."""
    rows = source.sql(
        "SELECT __$start_lsn AS l, __$seqval AS s, __$operation AS o, __$command_id AS c, id, "
        "code, qty, note FROM cdc.dbo_items_CT "
        "WHERE __$start_lsn >= sys.fn_cdc_get_min_lsn(N'dbo_items') "
        "ORDER BY __$start_lsn, __$command_id, __$seqval, __$operation"
    )
    events: dict[str, dict] = {}
    for r in rows:
        lsn = "0x" + r["l"].hex().upper()
        image = None if r["o"] in (1, 3) else (r["id"], r["code"], r["qty"], r["note"])
        events.setdefault(lsn, {})[r["code"]] = image
    return [(lsn, images, False) for lsn, images in sorted(events.items())]


def versions(spark, path) -> list[tuple[object, ...]]:
    df = spark.read.format("delta").load(str(path))
    return sorted(
        (tuple(r[c] for c in (*COLUMNS, "_start_lsn", "_end_lsn")) for r in df.collect()), key=repr
    )


def check_current(spark, source, s1, s2) -> None:
    """Type 1 silver and type 2's current rows equal the source table row for row."""
    table = sorted(source.sql_rows(), key=repr)
    assert silver_rows(spark, s1) == table
    assert silver_rows(spark, s2, "__IS_CURRENT") == table


def check_validity(spark, bronze, history) -> None:
    """Each version's start and end are the commit times of its LSNs (bronze's _commit_ts)."""
    commit_ts = {
        r["_start_lsn"]: r["_commit_ts"]
        for r in spark.read.format("delta").load(str(bronze)).collect()
    }
    for r in spark.read.format("delta").load(str(history)).collect():
        assert r["__START_AT"] == commit_ts[r["_start_lsn"]]
        assert r["__END_AT"] == (None if r["_end_lsn"] is None else commit_ts[r["_end_lsn"]])
        assert r["__IS_CURRENT"] == (r["__END_AT"] is None)


def test_type_1_and_type_2_follow_a_random_workload_through_crashes_and_a_rebuild(
    spark, source, tmp_path, monkeypatch
):
    bronze, facts, control = tmp_path / "bronze", tmp_path / "facts", tmp_path / "control"
    s1, s2 = tmp_path / "silver1", tmp_path / "silver2"
    cdc = stream(spark, source.options())
    work = Workload(source, seed=16)
    # with options, the keys default to the capture instance's unique index
    assert instance_info(source.options(), "dbo_items").index_columns == ("id",)

    def run_stream():
        query = cdc.to_delta(
            str(bronze),
            app_id="items",
            checkpoint=str(tmp_path / "cp"),
            facts_table=str(facts),
            trigger={"availableNow": True},
        )
        query.awaitTermination()
        return query

    def apply(target, scd, **kw):
        return apply_changes(
            spark,
            str(bronze),
            str(target),
            capture_instance="dbo_items",
            keys=["code"],
            control_table=str(control),
            facts_table=str(facts),
            granularity="day",
            scd_type=scd,
            **kw,
        )

    # round 1: no snapshot; the first call rebuilds from every change; a crash after the MERGE
    work.run(30)
    run_stream()
    crash = RuntimeError("crash before the position write")
    for target, scd in ((s1, 1), (s2, 2)):
        monkeypatch.setattr(
            apply_module, "_write_position", lambda *a: (_ for _ in ()).throw(crash)
        )
        with pytest.raises(RuntimeError, match="crash before the position write"):
            apply(target, scd)
        monkeypatch.undo()
        replayed = apply(target, scd)
        assert replayed.rebuilt
        assert replayed.bronze_found
    check_current(spark, source, s1, s2)
    assert versions(spark, s2) == expected_versions(history_events(source))

    # round 2: more changes, bronze's verdict set; one call each, then a rerun applies nothing
    work.run(30)
    query = run_stream()
    verdict = finalization.advance(
        spark,
        str(control),
        str(bronze),
        finalization.end_offset_from_progress(query.lastProgress),
        granularity="minute",
    )
    assert verdict is not None
    for target, scd in ((s1, 1), (s2, 2)):
        result = apply(target, scd)
        assert not result.rebuilt
        assert result.bronze_rows > 0
        assert result.finalized_until == finalization.truncate(verdict, "day")
        again = apply(target, scd)
        assert (again.bronze_rows, again.inserted, again.updated, again.deleted) == (0, 0, 0, 0)
        assert again.applied_lsn == result.applied_lsn
    check_current(spark, source, s1, s2)
    history = history_events(source)
    assert versions(spark, s2) == expected_versions(history)
    applied = result.applied_lsn
    assert applied == history[-1][0]
    check_validity(spark, bronze, s2)

    # round 3: changes silver never sees (a gap), a re-snapshot, more changes; both rebuild
    work.run(8)
    snap = cdc.snapshot(str(bronze), resnapshot=True)
    work.run(8)
    run_stream()
    for target, scd in ((s1, 1), (s2, 2)):
        rebuilt = apply(target, scd)
        assert rebuilt.rebuilt
    check_current(spark, source, s1, s2)
    snapshot_images = {
        r["code"]: (r["id"], r["code"], r["qty"], r["note"])
        for r in spark.read.format("delta")
        .load(str(bronze))
        .where(f"_operation = 0 AND _snapshot = '{snap['lsn']}'")
        .collect()
    }
    seen = [e for e in history_events(source) if e[0] <= applied or e[0] > snap["lsn"]]
    before = [e for e in seen if e[0] <= applied]
    after = [e for e in seen if e[0] > snap["lsn"]]
    assert versions(spark, s2) == expected_versions(
        [*before, (snap["lsn"], snapshot_images, True), *after]
    )
