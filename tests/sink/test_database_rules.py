"""The database stream's rules without Spark: which failures park a table, which tables a
batch reads (one changed-tables statement per shared position, none for a table whose
instance is gone), and the membership rows' spelling."""

from __future__ import annotations

import json

from mssql_cdc.errors import ConnectionLostError, DataLossError, SqlServerError, SqlTimeoutError
from mssql_cdc.sink.database_sink import DatabaseSink, DatabaseTable, _Batch, parkable
from mssql_cdc.sink.ledger import ids, metadata
from mssql_cdc.sink.ledger.database import member_row
from mssql_cdc.sink.tables import table_ref

L1, L2, L3, L4 = (f"0x{n:020X}" for n in (10, 20, 30, 40))


def test_a_table_s_own_failures_park_it_and_the_connection_s_fail_the_batch():
    assert parkable(DataLossError("changes of dbo_orders were purged"))
    assert parkable(PermissionError("SELECT on cdc.dbo_orders_CT is denied"))
    assert parkable(SqlServerError("Invalid object name 'cdc.dbo_x_CT'.", number=208))
    assert parkable(ValueError("the checkpoint was deleted or rewound"))
    # as Spark wraps a Python worker's failure: only the traceback's last line is left
    wrapped = RuntimeError("py4j error\nmssql_cdc.errors.DataLossError: changes were purged")
    assert parkable(wrapped)
    assert not parkable(ConnectionLostError("the connection was lost"))
    assert not parkable(SqlTimeoutError("timeout"))
    assert not parkable(RuntimeError("Spark's own failure"))
    # a deadlock victim, or any server error not about the table's own objects: the batch
    # fails and is replayed, nothing is parked
    assert not parkable(SqlServerError("deadlock victim", number=1205))
    assert not parkable(SqlServerError("raised by a trigger", number=50000))
    wrapped_server = RuntimeError("mssql_cdc.errors.SqlServerError: [1205] deadlock victim")
    assert not parkable(wrapped_server)


class _Source:
    """A fake server: low-water marks, and which instance names changed after each position;
    each listed name is its table's only instance unless ``siblings`` says otherwise."""

    def __init__(
        self,
        low: dict[str, str],
        changed: dict[str, set[str]],
        siblings: dict[str, tuple[str, ...]] | None = None,
    ) -> None:
        self.low, self.changes = low, changed
        self.siblings = siblings or {}
        self.asked: list[tuple[tuple[str, ...], str, str]] = []

    def tables(self) -> dict[str, tuple[str, tuple[str, ...]]]:
        return {n: (low, self.siblings.get(n, (n,))) for n, low in self.low.items()}

    def changed(self, names, after, upto):
        self.asked.append((tuple(names), after, upto))
        return {n for n in names if n in self.changes.get(after, set())}

    def read(self, spark, capture_instance, after, upto, upto_commit_ts=""):  # pragma: no cover
        raise AssertionError("no read in these tests")

    def start(self, capture_instance, upto, low=None):  # pragma: no cover
        return None


class _Ledger:
    """No bronze holds a batch (nothing to refuse a park for)."""

    def bronze_holds(self, target, sink_id, batch_id) -> bool:
        return False


def _sink(names: list[str], source: _Source) -> DatabaseSink:
    tables = [DatabaseTable(n, table_ref(f"/tmp/b/{n}", "target"), f"app-{n}") for n in names]
    return DatabaseSink("db", tables, table_ref("/tmp/facts", "facts_table"), source, "/tmp/chk")


def test_a_batch_reads_new_tables_tables_below_their_low_water_and_changed_ones():
    names = ["new", "purged", "a", "b", "c", "lagging", "gone"]
    source = _Source(
        {"new": L1, "purged": L3, "a": L1, "b": L1, "c": L1, "lagging": L1},
        {L2: {"b"}, L1: {"lagging"}},
    )
    sink = _sink(names, source)
    states = {n: sink._state(t, None) for n, t in zip(names, sink.tables, strict=True)}
    positions = {"purged": L2, "a": L2, "b": L2, "c": L2, "lagging": L1, "gone": L2}
    for name, position in positions.items():
        states[name].position = position
    done = _Batch(upto=L4)
    chosen = sink._to_read(_Ledger(), list(states.values()), 3, done)
    assert [s.table.capture_instance for s in chosen] == ["new", "purged", "b", "lagging"]
    # one statement per position the tables share, never one per table
    assert source.asked == [(("a", "b", "c"), L2, L4), (("lagging",), L1, L4)]
    assert [s.table.capture_instance for s in done.parked] == ["gone"]
    assert "does not exist or the login may not read it" in (states["gone"].parked or "")


def test_a_failing_probe_is_asked_again_table_by_table_and_parks_only_the_failing_one():
    class Denied(_Source):
        def changed(self, names, after, upto):
            self.asked.append((tuple(names), after, upto))
            if "b" in names:
                raise SqlServerError("SELECT permission was denied on cdc.b_CT", number=229)
            return {n for n in names if n in self.changes.get(after, set())}

    source = Denied({"a": L1, "b": L1, "c": L1}, {L2: {"a", "c"}})
    sink = _sink(["a", "b", "c"], source)
    states = [sink._state(t, None) for t in sink.tables]
    for state in states:
        state.position = L2
    done = _Batch(upto=L4)
    chosen = sink._to_read(_Ledger(), states, 3, done)
    assert [s.table.capture_instance for s in chosen] == ["a", "c"]
    assert [s.table.capture_instance for s in done.parked] == ["b"]
    assert source.asked[0][0] == ("a", "b", "c")  # one statement first, then one each


def test_a_table_between_two_instances_is_read_when_either_changed():
    """``dbo_t`` has a newer instance ``dbo_t_v2`` (the DBA's switch): the probe asks about both,
    and a change in the newer one alone reads the table (its read follows the switch)."""
    source = _Source(
        {"dbo_t": L1, "dbo_u": L1},
        {L2: {"dbo_t_v2"}},
        siblings={"dbo_t": ("dbo_t", "dbo_t_v2")},
    )
    sink = _sink(["dbo_t", "dbo_u"], source)
    states = [sink._state(t, None) for t in sink.tables]
    for state in states:
        state.position = L2
    chosen = sink._to_read(_Ledger(), states, 3, _Batch(upto=L4))
    assert [s.table.capture_instance for s in chosen] == ["dbo_t"]
    assert source.asked == [(("dbo_t", "dbo_t_v2", "dbo_u"), L2, L4)]


def test_a_table_already_at_the_batch_end_is_not_asked_about():
    source = _Source({"a": L1}, {})
    sink = _sink(["a"], source)
    state = sink._state(sink.tables[0], None)
    state.position = L4
    assert sink._to_read(_Ledger(), [state], 3, _Batch(upto=L4)) == []
    assert source.asked == []


def test_membership_rows_and_commits_keep_their_spelling():
    row = member_row("sales-db", 7, 42, joined=True, lsn=L1)
    assert (row.batch_id, row.kind, row.lsn) == (42, "database_joined", L1)
    assert json.loads(row.detail or "") == {
        "database_app_id": "sales-db",
        "database_batch": 7,
        "start_lsn": None,
    }
    started = member_row("sales-db", 7, 42, joined=True, lsn=L2, start=L1)
    assert json.loads(started.detail or "")["start_lsn"] == L1
    assert member_row("sales-db", 9, 50, joined=False, lsn=None).kind == "database_left"
    assert ids.database_members("sales-db", 7) == ids.Txn("sales-db#members", 7)
    # never a sink's own <sink>#facts, whatever the names
    assert ids.database_facts("sales-db", 7) == ids.Txn("sales-db#database", 7)
    assert metadata.database_fact("sales-db", "database_facts", 7, 3) == (
        '{"app_id":"sales-db","batch_id":7,"event":"database_facts","tables":3}'
    )


def test_an_instance_disabled_between_listing_and_probe_is_listed_again_not_parked():
    """The switch's last step (the older instance disabled) lands between the batch's catalog
    call and its probe: the probe's 208 lists the table's instances again, and asks again."""

    class Switching(_Source):
        def __init__(self) -> None:
            super().__init__({"dbo_t": L1}, {L2: {"dbo_t_v2"}}, {"dbo_t": ("dbo_t", "dbo_t_v2")})

        def tables(self):
            listed = super().tables()
            self.siblings = {"dbo_t": ("dbo_t_v2",)}  # disabled right after this listing
            return listed

        def changed(self, names, after, upto):
            self.asked.append((tuple(names), after, upto))
            if "dbo_t" in names:
                raise SqlServerError("Invalid object name 'cdc.dbo_t_CT'.", number=208)
            return {n for n in names if n in self.changes.get(after, set())}

    source = Switching()
    sink = _sink(["dbo_t"], source)
    state = sink._state(sink.tables[0], None)
    state.position = L2
    done = _Batch(upto=L4)
    chosen = sink._to_read(_Ledger(), [state], 3, done)
    assert [s.table.capture_instance for s in chosen] == ["dbo_t"]
    assert done.parked == []
    assert [names for names, _, _ in source.asked] == [("dbo_t", "dbo_t_v2"), ("dbo_t_v2",)]


def test_an_idle_table_between_two_instances_gets_a_row_every_batch():
    """A recent heartbeat would wait ``heartbeat_seconds``; a table with two instances writes
    its 0-row row every batch, so its recorded position passes the newer instance's start."""
    from mssql_cdc.sink.facts import utc_now

    source = _Source({"dbo_t": L1, "dbo_u": L1}, {}, {"dbo_t": ("dbo_t", "dbo_t_v2")})
    sink = _sink(["dbo_t", "dbo_u"], source)
    states = [sink._state(t, None) for t in sink.tables]
    for state in states:
        state.position = L2
        state.written_at = utc_now()  # a heartbeat just written
    done = _Batch(upto=L4)
    assert sink._to_read(_Ledger(), states, 3, done) == []
    beats = sink._heartbeats(
        states, 3, {"lsn": L4, "commit_ts": ""}, (states[0].written_at, 0.0), done
    )
    assert [state.table.capture_instance for _, state in beats] == ["dbo_t"]
    assert [s.position for s in states] == [L4, L4]


def test_only_a_table_written_in_the_batch_before_has_its_bronze_state_warmed(monkeypatch):
    """After a batch's facts commit the one warming thread computes the facts table's state
    first, then bronze's of the busy tables only (written in this batch and the one before):
    not of a table that just joined, nor of one moved in from a single stream, whose previous
    micro-batch id is right below this batch's too (a first run's batch 0 queued every table
    it created, and the warming of 100 tables held the two cores for 70 s)."""
    import mssql_cdc.sink.database_sink as module

    asked: list[tuple[str, bool]] = []

    class Warmer:
        def request(self, spark, ref, *, first=False):
            asked.append((ref.text, first))

    monkeypatch.setattr(module, "WARMER", Warmer())
    sink = _sink(["new", "moved", "busy", "once"], _Source({}, {}))
    states = {t.capture_instance: sink._state(t, None) for t in sink.tables}
    states["new"].offset = -5  # joins at database batch 5 with micro-batch id 0
    states["moved"].last, states["moved"].offset = 8, 4  # its single stream's newest was 8
    states["busy"].last, states["busy"].written_batch = 4, 4
    states["once"].last, states["once"].written_batch = 2, 2
    sink._warm_next(None, True, list(states.values()), 5)
    assert asked == [("/tmp/facts", True), ("/tmp/b/busy", False)]
    asked.clear()
    sink._warm_next(None, False, [states["once"]], 5)  # no facts commit: nothing for facts
    assert asked == []
    # a run's batch 0: no table was written in a batch before it
    fresh = sink._state(sink.tables[0], None)
    sink._warm_next(None, True, [fresh], 0)
    assert asked == [("/tmp/facts", True)]
