"""The fault harness's checks (checks.py) on small hand-made rows: each passes on a correct
trial's rows and bites on the fault it is there for (a planted duplicate, a planted loss, a
stale snapshot row, a verdict past bronze, a missing chunk, a wrong silver version...)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import checks
import kinds
import pytest
from checks import Change, Findings, SnapshotRow, Version
from kinds import KindPlan, TableTruth, TrialData, check_snapshot_calls


def lsn(n: int) -> str:
    return f"0x{n:020X}"


def ch(n: int, op: int, key: int, name: str = "a", *, seq: int = 0, batch: int | None = None):
    """A change of commit ``n``: ``op`` on ``key`` leaving (key, name)."""
    return Change(lsn(n), lsn(n * 10 + seq), op, 1, (key, name), "dbo_orders", batch)


#: insert 1 and 2 (commit 1); update 1 (commit 2); delete 2 (commit 3); move 1 to 3 (commit 4)
HISTORY = [
    ch(1, 2, 1, "a"),
    ch(1, 2, 2, "b", seq=1),
    ch(2, 3, 1, "a"),
    ch(2, 4, 1, "a2"),
    ch(3, 1, 2, "b"),
    ch(4, 3, 1, "a2"),
    ch(4, 4, 3, "a2"),
]
TIMES = {lsn(n): dt.datetime(2026, 1, 1, 0, n) for n in range(1, 6)}


def bronze_of(history, batch: int = 0):
    return [Change(c.lsn, c.seqval, c.op, c.cmd, c.image, c.instance, batch) for c in history]


def facts_row(batch: int, rows: int, lo: int, hi: int, app: str = "app"):
    return {
        "app_id": app,
        "batch_id": batch,
        "rows": rows,
        "event": None,
        "min_lsn": lsn(lo),
        "max_lsn": lsn(hi),
    }


# ---- the model ---------------------------------------------------------------------------------


def test_the_table_at_each_lsn_follows_the_commits():
    assert checks.table_at(HISTORY, lsn(1)) == {1: (1, "a"), 2: (2, "b")}
    assert checks.table_at(HISTORY, lsn(3)) == {1: (1, "a2")}
    assert checks.table_at(HISTORY) == {3: (3, "a2")}  # the key change moved the row


def test_a_key_states_from_an_lsn_are_its_state_then_and_every_later_one():
    states = checks.key_states(HISTORY)
    assert checks.states_from(states[1], lsn(2)) == [(1, "a2"), None]
    assert checks.states_from(states[2], "") == [None, (2, "b"), None]
    assert checks.states_from(states[3], lsn(5)) == [(3, "a2")]


def test_the_rebuild_ranks_a_chunk_row_after_the_changes_of_its_stamp():
    chunk = [SnapshotRow(lsn(1), lsn(2), (1, "chunk"), 0)]
    changes = [ch(2, 4, 1, "at the stamp"), ch(3, 4, 1, "after")]
    assert checks.rebuilt(chunk, changes[:1], lsn(1)) == {1: ((1, "chunk"), lsn(2))}
    assert checks.rebuilt(chunk, changes, lsn(1)) == {1: ((1, "after"), lsn(3))}
    # a delete after the snapshot removes its row; a change at or before ``since`` is ignored
    assert checks.rebuilt(chunk, [ch(1, 2, 5), ch(3, 1, 1)], lsn(1)) == {}


def test_scd2_versions_one_per_commit_that_changed_the_image():
    versions = checks.scd2_versions([], HISTORY)
    assert versions == [
        Version((1, "a"), lsn(1), lsn(2)),
        Version((1, "a2"), lsn(2), lsn(4)),  # the key moved away: closed
        Version((2, "b"), lsn(1), lsn(3)),  # deleted
        Version((3, "a2"), lsn(4), None),
    ]
    # an update leaving the same image opens no version; a snapshot is the first event
    same = [ch(2, 3, 1, "a"), ch(2, 4, 1, "a")]
    assert checks.scd2_versions([SnapshotRow(lsn(1), lsn(1), (1, "a"))], same) == [
        Version((1, "a"), lsn(1), None)
    ]


def test_the_delta_log_gives_each_commit_its_txn_ids_and_metadata():
    lines = {
        0: ['{"commitInfo": {"userMetadata": "{\\"event\\": \\"x\\"}"}}', '{"add": {}}'],
        1: ['{"txn": {"appId": "a#events", "version": 1}}', "", '{"commitInfo": {}}'],
    }
    assert checks.delta_log(lines) == [
        {"version": 0, "txns": [], "userMetadata": '{"event": "x"}', "adds": 1},
        {"version": 1, "txns": [("a#events", 1)], "userMetadata": None, "adds": 0},
    ]


# ---- the checks pass on correct rows ------------------------------------------------------------


def test_a_correct_trial_passes_every_check():
    found = Findings()
    bronze = bronze_of(HISTORY)
    checks.check_changes(found, bronze, HISTORY)
    checks.check_batch_facts(found, bronze, [facts_row(0, 7, 1, 4)])
    snapshot = [SnapshotRow(lsn(1), lsn(1), (1, "a")), SnapshotRow(lsn(1), lsn(1), (2, "b"))]
    checks.check_snapshot(found, snapshot, HISTORY, lsn=lsn(1))
    checks.check_table(found, checks.table_at(HISTORY), {3: (3, "a2")}, label="t")
    checks.check_verdicts(found, [(TIMES[lsn(3)], {c.ident for c in HISTORY[:5]})], HISTORY, TIMES)
    rebuilt = checks.rebuilt([], HISTORY, "")
    checks.check_silver_type1(found, [((3, "a2"), lsn(4))], rebuilt)
    versions = checks.scd2_versions([], HISTORY)
    stamped = [
        Version(v.image, v.start, v.end, TIMES[v.start], v.end and TIMES[v.end]) for v in versions
    ]
    checks.check_silver_type2(found, stamped, versions, TIMES)
    assert found.problems == []
    assert (found.duplicates, found.losses) == (0, 0)
    assert found.checked["changes"] == 7


# ---- each check bites ------------------------------------------------------------------------


def test_a_planted_duplicate_change_is_counted():
    found = Findings()
    checks.check_changes(found, [*bronze_of(HISTORY), bronze_of(HISTORY)[3]], HISTORY)
    assert (found.duplicates, found.losses) == (1, 0)
    assert "duplicate change rows" in found.problems[0]


def test_a_planted_loss_is_counted():
    found = Findings()
    checks.check_changes(found, bronze_of(HISTORY[:4] + HISTORY[5:]), HISTORY)
    assert (found.duplicates, found.losses) == (0, 1)
    assert "missing from bronze" in found.problems[0]


def test_changes_outside_what_the_stream_delivers_and_wrong_values_are_broken_promises():
    found = Findings()
    wrong = Change(HISTORY[0].lsn, HISTORY[0].seqval, 2, 1, (1, "z"), "dbo_orders", 0)
    checks.check_changes(
        found, [wrong, *bronze_of(HISTORY[1:])], HISTORY, expected=lambda x: x > lsn(1)
    )
    assert (found.duplicates, found.losses) == (0, 0)
    assert [p.split(" ")[1] for p in found.problems] == ["bronze", "bronze"]
    assert "outside what the stream delivers" in found.problems[0]
    assert "wrong values" in found.problems[1]


def test_a_key_twice_in_a_snapshot_is_a_duplicate_and_a_missing_key_a_loss():
    found = Findings()
    checks.check_snapshot(found, [SnapshotRow(lsn(1), lsn(1), (1, "a"))] * 2, HISTORY, lsn=lsn(1))
    # key 2 is missing too, but it was deleted at 3: a read after LSN 1 may not have seen it
    assert (found.duplicates, found.losses) == (1, 0)
    found = Findings()
    history = [*HISTORY, ch(4, 2, 9, "x", seq=2)]
    checks.check_snapshot(found, [SnapshotRow(lsn(4), lsn(4), (9, "x"))], history, lsn=lsn(4))
    assert (found.duplicates, found.losses) == (0, 1)  # key 3: in the table from 4 to the end
    assert "keys missing" in found.problems[0]


def test_a_snapshot_row_with_an_image_older_than_its_stamp_is_caught():
    found = Findings()
    rows = [SnapshotRow(lsn(2), lsn(2), (1, "a")), SnapshotRow(lsn(2), lsn(2), (2, "b"))]
    checks.check_snapshot(found, rows, HISTORY, lsn=lsn(2))
    assert len(found.problems) == 1
    assert "never had at or after their stamp" in found.problems[0]


def test_a_chunk_missing_a_key_of_its_range_is_a_loss():
    history = [ch(1, 2, 1, "a"), ch(1, 2, 2, "b", seq=1), ch(1, 2, 3, "c", seq=2)]
    rows = [SnapshotRow(lsn(1), lsn(1), (1, "a"), 0), SnapshotRow(lsn(1), lsn(2), (3, "c"), 1)]
    found = Findings()
    checks.check_snapshot(
        found, rows, history, lsn=lsn(1), ranges=[(None, 2, lsn(1)), (2, None, lsn(2))]
    )
    assert found.losses == 1
    assert "[2]" in found.problems[0]


def test_a_downstream_table_missing_a_key_or_holding_another_image_is_caught():
    found = Findings()
    checks.check_table(found, {1: (1, "old"), 9: (9, "x")}, {1: (1, "a"), 2: (2, "b")}, label="t")
    assert found.losses == 1
    assert len(found.problems) == 3  # missing, extra, differing


def test_facts_rows_counted_twice_or_off_from_bronze_are_caught():
    bronze = bronze_of(HISTORY[:2], 0) + bronze_of(HISTORY[2:], 1)
    found = Findings()
    n = checks.check_batch_facts(
        found, bronze, [facts_row(0, 2, 1, 1), facts_row(1, 4, 2, 4), facts_row(1, 4, 2, 4)]
    )
    assert n == 2
    assert found.duplicates == 1
    assert "(facts, bronze)" in found.problems[1]  # batch 1 holds 5 rows, the facts say 4
    # a batch id reused by another generation over another LSN range counts apart
    found = Findings()
    checks.check_batch_facts(
        found, bronze, [facts_row(0, 2, 1, 1), facts_row(1, 5, 2, 4, "app.g1")]
    )
    assert found.problems == []
    found = Findings()
    checks.check_batch_facts(found, bronze, [facts_row(0, 2, 1, 1)])
    assert "no facts batch row counts" in found.problems[-1]


def test_snapshot_closing_rows_and_chunks_are_checked():
    rows = [SnapshotRow(lsn(1), lsn(1), (k, "x"), k // 2) for k in range(4)]
    plan = {
        "event": "snapshot_plan",
        "app_id": "app",
        "rows": 0,
        "detail": json.dumps({"snapshot": lsn(1), "chunks": [[None, 2], [2, None]]}),
    }

    def chunk(n: int, count: int):
        return {
            "event": "snapshot_chunk",
            "app_id": "app",
            "rows": count,
            "min_lsn": lsn(1),
            "detail": json.dumps({"snapshot": lsn(1), "chunk": n}),
        }

    close = {"event": "bootstrap", "app_id": "app", "rows": 4, "max_lsn": lsn(1)}
    found = Findings()
    checks.check_snapshot_facts(
        found, {lsn(1): rows}, [plan, chunk(0, 2), chunk(1, 2), close], closing={lsn(1): "app"}
    )
    assert found.problems == []
    found = Findings()
    checks.check_snapshot_facts(
        found, {lsn(1): rows}, [plan, chunk(0, 2), chunk(0, 2), close], closing={lsn(1): "app"}
    )
    assert (found.duplicates, found.losses) == (1, 1)  # chunk 0 twice, chunk 1 never
    found = Findings()
    checks.check_snapshot_facts(
        found,
        {lsn(1): rows},
        [plan, chunk(0, 2), chunk(1, 2), close, close],
        closing={lsn(1): "app"},
    )
    assert found.duplicates == 1
    assert "2 closing facts rows" in found.problems[0]


def test_a_verdict_past_bronze_is_caught():
    found = Findings()
    held = {c.ident for c in HISTORY[:2]}
    checks.check_verdicts(found, [(None, set()), (TIMES[lsn(3)], held)], HISTORY, TIMES)
    assert len(found.problems) == 1
    assert "state 1" in found.problems[0]
    assert found.checked["verdicts"] == 1


@pytest.mark.parametrize(
    ("silver", "what"),
    [
        ([((3, "a2"), lsn(4)), ((3, "a2"), lsn(4))], "more than once"),
        ([((3, "a2"), lsn(2))], "another _start_lsn"),
        ([], "keys missing"),
    ],
)
def test_type1_silver_that_differs_from_the_rebuild_is_caught(silver, what):
    found = Findings()
    checks.check_silver_type1(found, silver, checks.rebuilt([], HISTORY, ""))
    assert any(what in p for p in found.problems), found.problems


def test_type2_silver_missing_a_version_or_with_a_wrong_end_or_time_is_caught():
    want = checks.scd2_versions([], HISTORY)
    stamped = [
        Version(v.image, v.start, v.end, TIMES[v.start], v.end and TIMES[v.end]) for v in want
    ]
    found = Findings()
    checks.check_silver_type2(found, stamped[1:], want, TIMES)
    assert found.losses == 1
    found = Findings()
    bad = [*stamped[:3], Version((3, "a2"), lsn(4), lsn(5), TIMES[lsn(4)], TIMES[lsn(5)])]
    checks.check_silver_type2(found, bad, want, TIMES)
    assert "versions differ" in found.problems[0]
    found = Findings()
    late = [*stamped[:3], Version((3, "a2"), lsn(4), None, TIMES[lsn(5)], None)]
    checks.check_silver_type2(found, late, want, TIMES)
    assert "commit times" in found.problems[0]


def test_txn_versions_must_count_from_zero_once_each():
    found = Findings()
    checks.check_txn_versions(found, [0, 1, 2], app_id="a#events", want=3)
    assert found.problems == []
    checks.check_txn_versions(found, [0, 2], app_id="a#events", want=3)
    assert found.problems == ["txnAppId a#events: versions [0, 2], want 0..2"]


def test_a_resnapshot_call_may_return_the_newest_snapshot_but_never_an_older_one():
    """``make chaos TRIALS=1 SEED=6014 KINDS=snapshot``: with the capture job stopped, two
    ``snapshot(resnapshot=True)`` calls found nothing captured since the newest snapshot and
    returned it (the product's rule), so bronze held 3 snapshots for 4 calls; the count check
    wanted 4 and failed the trial. The calls' answers now set the count."""
    reuse, again = {"resnapshot": False}, {"resnapshot": True}
    calls = [reuse, again, again, again]
    found = Findings()
    check_snapshot_calls(found, calls, [lsn(1), lsn(2), lsn(2), lsn(3)], 3)
    assert found.problems == []
    check_snapshot_calls(found, calls, [lsn(1), lsn(3), lsn(2), lsn(4)], 4)
    older = f"snapshot() call 2 returned {lsn(2)}, older than the newest before it"
    assert found.problems == [older]
    found = Findings()
    check_snapshot_calls(found, calls, [lsn(1), lsn(2), lsn(3), lsn(4)], 3)  # one not in bronze
    assert found.problems == ["3 snapshots for 4 snapshot() calls (want 4-8)"]
    found = Findings()
    check_snapshot_calls(found, [reuse, reuse], [lsn(1), lsn(1)], 1)
    assert found.problems == []


# ---- the database kind, table by table -----------------------------------------------------------


def other(n: int, op: int, key: int, note: str = "o", *, seq: int = 0):
    """A change of ``dbo.other`` in commit ``n`` (commit numbers shared with ``HISTORY``)."""
    return Change(lsn(n), lsn(n * 10 + seq + 5), op, 1, (key, note), "dbo_other")


OTHER = [other(1, 2, 7), other(3, 3, 7), other(3, 4, 7, "p"), other(5, 2, 8)]


def bronze_rows(history, columns, batches):
    """Bronze rows of ``history``: each change in the batch ``batches[lsn]``."""
    return [
        {
            "_start_lsn": c.lsn,
            "_seqval": c.seqval,
            "_operation": c.op,
            "_command_id": c.cmd,
            "_capture_instance": c.instance,
            "_batch_id": batches[c.lsn],
            **dict(zip(columns, c.image, strict=True)),
        }
        for c in history
    ]


def database_trial(orders_rows, other_rows, facts):
    columns = ("id", "name")
    other_columns = ("id", "note")
    final = {
        "final": True,
        "tables": {
            "dbo_orders": bronze_rows(orders_rows, columns, {lsn(n): n // 3 for n in range(1, 6)}),
            "dbo_other": bronze_rows(other_rows, other_columns, {lsn(n): n // 3 for n in range(6)}),
        },
        "facts": facts,
    }
    return TrialData(
        history=HISTORY,
        times=TIMES,
        table={3: (3, "a2")},
        states=[final],
        progress={},
        bronze_log=[],
        tables={
            "dbo_orders": TableTruth(HISTORY, {3: (3, "a2")}, columns),
            "dbo_other": TableTruth(OTHER, {7: (7, "p"), 8: (8, "o")}, other_columns),
        },
    )


def database_facts(*, other_rows=(1, 3), parked=False):
    """Each sink id joined once; dbo_orders's batches 0 (commits 1-2) and 1 (3-4), dbo_other's
    0 (commit 1) and 1 (3-5), a heartbeat row of dbo_orders at commit 5."""

    def joined(app):
        return {"app_id": app, "batch_id": 0, "rows": 0, "event": "database_joined"}

    orders, other_ = kinds.database_app_id("dbo_orders"), kinds.database_app_id("dbo_other")
    rows = [
        joined(orders),
        joined(other_),
        facts_row(0, 4, 1, 2, orders),
        facts_row(1, 3, 3, 4, orders),
        {**facts_row(2, 0, 5, 5, orders), "min_lsn": None},
        facts_row(0, other_rows[0], 1, 2, other_),
        facts_row(1, other_rows[1], 3, 5, other_),
    ]
    if parked:
        rows.append({"app_id": other_, "batch_id": 1, "rows": 0, "event": "table_parked"})
    return rows


def check_database(data):
    found = Findings()
    kinds.check(found, KindPlan("database", 0, [], {}), data, Path("/trial"))
    return found


def test_a_correct_database_trial_passes_and_a_parked_table_is_a_note():
    found = check_database(database_trial(HISTORY, OTHER, database_facts(parked=True)))
    assert found.problems == []
    assert found.checked["changes"] == len(HISTORY) + len(OTHER)
    assert len(found.notes) == 1
    assert found.notes[0].startswith("dbo_other (chaos-dbo_other): parked at its batch 1")


def test_a_database_trial_names_the_table_of_a_duplicate_or_a_loss():
    found = check_database(database_trial(HISTORY, [*OTHER, OTHER[1]], database_facts()))
    assert found.duplicates == 1
    assert found.problems[0].startswith("dbo_other (chaos-dbo_other): 1 duplicate change rows")
    found = check_database(database_trial(HISTORY[1:], OTHER, database_facts()))
    assert found.losses >= 1
    assert all(p.startswith("dbo_orders (chaos-dbo_orders): ") for p in found.problems)


def test_a_database_trial_checks_each_sink_ids_facts_against_its_bronze():
    found = check_database(database_trial(HISTORY, OTHER, database_facts(other_rows=(1, 2))))
    assert any("facts rows != bronze rows" in p for p in found.problems)
    assert any("count 3 rows in all, bronze holds 4" in p for p in found.problems)
    facts = database_facts()
    found = check_database(database_trial(HISTORY, OTHER, [*facts, facts[2], facts[0]]))
    assert found.duplicates == 1  # dbo_orders's batch 0 written twice
    assert any("2 database_joined and 0 database_left" in p for p in found.problems)
    found = check_database(database_trial(HISTORY, OTHER, [*facts, facts_row(0, 0, 1, 1, "x")]))
    assert found.problems == ["facts rows of sink ids no table of the stream has: ['x']"]


def test_the_facts_total_must_be_bronzes_change_rows():
    found = Findings()
    checks.check_batch_total(found, bronze_of(HISTORY), [facts_row(0, 7, 1, 4)])
    assert found.problems == []
    checks.check_batch_total(found, bronze_of(HISTORY), [facts_row(0, 3, 1, 2)])
    assert found.problems == [
        "the micro-batch facts rows count 3 rows in all, bronze holds 7 change rows"
    ]
