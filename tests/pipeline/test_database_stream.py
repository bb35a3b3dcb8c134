"""``start_database``: one query for many capture instances, each table landed once under its
own sink id, the same bronze rows and facts rows as its single stream, idle tables costing no
read, a failing table parked alone, a kill between two tables' commits of one batch, and moves
between a single stream and the database stream."""

from __future__ import annotations

import json
import re

import pytest

from _pipeline import DISABLE_ORDERS_V1, ORDER, ORDERS_V2, latest_images
from mssql_cdc import leave_database, parked_tables, start_database, stream
from mssql_cdc.finalization import (
    candidate,
    end_offset_from_progress,
    finalize_database,
    finalized_until,
    track_database,
    truncate,
)
from mssql_cdc.sink import ledger as ledger_pkg
from mssql_cdc.source import ServerReads

# -- arguments (no Spark) -----------------------------------------------------------------------


class _NoSpark:
    """Nothing may touch the session when the arguments are wrong."""

    def __getattr__(self, name: str) -> object:
        raise AssertionError(f"the session was used ({name}) before the arguments were checked")


@pytest.mark.parametrize(
    ("instances", "kwargs", "error", "message"),
    [
        (["a", "b"], {"target": "bronze.x"}, ValueError, r"target 'bronze.x' must contain"),
        (["a", "b"], {"app_id": "orders"}, ValueError, r"app_id 'orders' must contain"),
        (["a", "a"], {}, ValueError, r"'a' is given twice"),
        ([], {}, ValueError, r"capture_instances is empty"),
        (["a"], {"checkpoint": "/chk/{ci}"}, ValueError, r"one checkpoint for all its tables"),
        (["a"], {"name": "app-a"}, ValueError, r"also the app_id of 'a'"),
        (["a"], {"name": ""}, ValueError, r"name must be a non-empty string"),
        (
            ["a"],
            {"query_name": "q"},
            TypeError,
            r"unexpected keyword argument\(s\) \['query_name'\]",
        ),
        (["a"], {"heartbeat_seconds": -1}, ValueError, r"heartbeat_seconds must be"),
        (["a"], {"parallel": 0}, ValueError, r"parallel must be a whole number"),
        (["a"], {"trigger": {"every": 1}}, ValueError, r"trigger"),
        (["a"], {"bootstrap": "yes"}, TypeError, r"bootstrap must be True or False"),
        (["a"], {"bootstrap": True, "snapshot": "some"}, ValueError, r"'full' or 'chunked'"),
        (["a"], {"snapshot": "chunked"}, ValueError, r"it needs bootstrap=True"),
        (["a"], {"on_data_loss": "skip"}, ValueError, r"on_data_loss must be 'fail' or"),
        (["a"], {"resnapshot_interval_days": -1}, ValueError, r"resnapshot_interval_days must"),
        (
            {"a": {"failOnDataLoss": "false"}},
            {"on_data_loss": "resnapshot"},
            ValueError,
            r"needs failOnDataLoss=true",
        ),
        (
            ["a"],
            {"on_data_loss": "resnapshot", "checkpoint": "s3://b/chk/db"},
            ValueError,
            r"'s3://b/chk/db' is a URI",
        ),
        (
            {"a": {"startingLsn": "latest"}},
            {"bootstrap": True},
            ValueError,
            r"\['a'\]: bootstrap=True sets startingLsn itself",
        ),
        (
            {"a": {"maxCommitsPerBatch": "5"}},
            {},
            ValueError,
            r"\['a'\] overrides \['maxCommitsPerBatch'\]: .* in the shared options",
        ),
    ],
)
def test_bad_arguments_fail_before_anything_starts(instances, kwargs, error, message):
    args = {
        "target": "bronze.{ci}",
        "app_id": "app-{ci}",
        "checkpoint": "/tmp/chk/db",
        "facts_table": "ops.facts",
        "name": "db",
    }
    args.update(kwargs)
    with pytest.raises(error, match=message):
        start_database(_NoSpark(), {"connectionString": "Server=x"}, instances, **args)  # type: ignore[arg-type]


# -- with Spark and the emulator ----------------------------------------------------------------


def _other(source, upto_id: int) -> None:
    source.sql(f"INSERT INTO dbo.other VALUES ({upto_id}, N'n{upto_id}')")
    source.sql(f"UPDATE dbo.other SET note = N'u{upto_id}' WHERE id = {upto_id}")


def _both_changed(source) -> None:
    """dbo.orders' first workload and three changes of dbo.other, in one scan."""
    source.workload(1, scan=False)
    _other(source, 1)
    source.scan()


def _other_changes(source) -> list[tuple[object, ...]]:
    rows = source.sql(
        "SELECT __$start_lsn AS l, __$operation AS o, id, note FROM "
        "cdc.fn_cdc_get_all_changes_dbo_other(sys.fn_cdc_get_min_lsn(N'dbo_other'), "
        "sys.fn_cdc_get_max_lsn(), N'all update old') "
        "ORDER BY __$start_lsn, __$seqval, __$operation"
    )
    return [("0x" + r["l"].hex().upper(), r["o"], r["id"], r["note"]) for r in rows]


class _Db:
    """A database stream of dbo_orders and dbo_other under ``tmp_path``."""

    def __init__(self, spark, source, tmp_path, name: str = "db") -> None:
        self.spark, self.source, self.tmp = spark, source, tmp_path
        self.name = name
        self.facts = str(tmp_path / "facts")
        self.options = source.options()
        del self.options["captureInstance"]

    def bronze(self, ci: str) -> str:
        return str(self.tmp / "bronze" / ci)

    def start(self, instances=("dbo_orders", "dbo_other"), **kwargs):
        """Starts the stream (availableNow unless ``trigger`` is given) and returns its query."""
        kwargs.setdefault("trigger", {"availableNow": True})
        return start_database(
            self.spark,
            self.options,
            list(instances),
            target=str(self.tmp / "bronze" / "{ci}"),
            app_id="t-{ci}",
            checkpoint=str(self.tmp / "chk" / self.name),
            facts_table=self.facts,
            name=self.name,
            **kwargs,
        )

    def run(self, instances=("dbo_orders", "dbo_other"), **kwargs):
        query = self.start(instances, **kwargs)
        query.awaitTermination(600)
        assert query.exception() is None, query.exception()
        return query

    def rows(self, ci: str, columns: list[str]) -> list[tuple[object, ...]]:
        df = self.spark.read.format("delta").load(self.bronze(ci))
        return [tuple(r[c] for c in columns) for r in df.orderBy(*ORDER).collect()]

    def leave(self, ci: str, checkpoint) -> int:
        """``leave_database`` of ``ci`` into a single stream's ``checkpoint``."""
        return leave_database(
            self.spark,
            name=self.name,
            target=self.bronze(ci),
            app_id=f"t-{ci}",
            facts_table=self.facts,
            database_checkpoint=str(self.tmp / "chk" / self.name),
            checkpoint=str(checkpoint),
        )

    def single(self, ci: str, checkpoint):
        """``ci``'s single stream (availableNow) on ``checkpoint``, run to its end."""
        options = {**self.source.options(), "captureInstance": ci}
        query = stream(self.spark, options).to_delta(
            self.bronze(ci),
            f"t-{ci}",
            str(checkpoint),
            self.facts,
            trigger={"availableNow": True},
        )
        query.awaitTermination(600)
        assert query.exception() is None
        return query

    def batch_rows(self, sink_id: str) -> list[tuple[int, int]]:
        df = self.spark.read.format("delta").load(self.facts)
        rows = df.where(f"app_id = '{sink_id}' AND event IS NULL").orderBy("batch_id").collect()
        return [(r["batch_id"], r["rows"]) for r in rows]


class _StopError(RuntimeError):
    """Raised from the ledger's commit hook: the run stops there, as a killed driver would."""


def _run_stopping_at(
    db: _Db, instances, kind: str, when: str, nth: int = 1, **kwargs
) -> list[tuple[str, str]]:
    """One run of the stream (tables one after the other) that stops at the ``nth``
    ``(kind, when)`` commit point; returns the commit points it passed."""
    calls: list[tuple[str, str]] = []

    def hook(k: str, w: str, txn: object) -> None:
        calls.append((k, w))
        if (k, w) == (kind, when) and calls.count((kind, when)) == nth:
            raise _StopError(f"stopped at {kind} {when}")

    ledger_pkg.ledger.commit_hook = hook
    try:
        # the tables one after the other: the stop falls between them
        query = db.start(instances, parallel=1, **kwargs)
        with pytest.raises(Exception, match=f"stopped at {kind} {when}"):
            query.awaitTermination(600)
    finally:
        ledger_pkg.ledger.commit_hook = None
    return calls


@pytest.mark.parametrize("local", [True, False], ids=["read-on-the-driver", "spark-read"])
def test_every_table_lands_once_and_a_rerun_reads_only_what_is_new(
    spark, source, tmp_path, monkeypatch, local
):
    """Small ranges are read on the driver (``read_locally``); with that off, every range is a
    batch read through ``format("mssql_cdc")``: the same rows either way."""
    monkeypatch.setattr(ServerReads, "local", local)
    _both_changed(source)
    db = _Db(spark, source, tmp_path)
    db.run()
    order_cols = ["_start_lsn", "_seqval", "_operation", "_command_id"]
    assert db.rows("dbo_orders", order_cols) == [c[:4] for c in source.changes()]
    assert db.rows("dbo_other", ["_start_lsn", "_operation", "id", "note"]) == _other_changes(
        source
    )
    assert [r for _, r in db.batch_rows("t-dbo_orders")] == [len(source.changes())]
    assert [r for _, r in db.batch_rows("t-dbo_other")] == [3]

    # only dbo.other changes: dbo_orders is idle (a heartbeat row, no read), dbo_other gets
    # its two new changes once
    _other(source, 2)
    source.scan()
    db.run()
    assert db.rows("dbo_other", ["_start_lsn", "_operation", "id", "note"]) == _other_changes(
        source
    )
    assert [r for _, r in db.batch_rows("t-dbo_other")] == [3, 3]
    assert len(db.rows("dbo_orders", order_cols)) == len(source.changes())
    # nothing new at all: no batch, nothing written
    before = db.batch_rows("t-dbo_other")
    db.run()
    assert db.batch_rows("t-dbo_other") == before


@pytest.mark.parametrize("local", [True, False], ids=["read-on-the-driver", "spark-read"])
def test_the_bronze_rows_are_those_of_a_single_stream(spark, source, tmp_path, monkeypatch, local):
    monkeypatch.setattr(ServerReads, "local", local)
    _both_changed(source)
    db = _Db(spark, source, tmp_path)
    db.run()
    single = str(tmp_path / "single")
    options = source.options()
    query = stream(spark, options).to_delta(
        single,
        "single-orders",
        str(tmp_path / "chk-single"),
        str(tmp_path / "facts-single"),
        trigger={"availableNow": True},
    )
    query.awaitTermination(600)
    columns = [c for c in spark.read.format("delta").load(single).columns if c != "_batch_id"]

    def content(path: str) -> list[tuple[object, ...]]:
        df = spark.read.format("delta").load(path)
        return [tuple(r[c] for c in columns) for r in df.orderBy(*ORDER).collect()]

    assert content(db.bronze("dbo_orders")) == content(single)


#: the facts columns a read's metrics files fill (NULL without them)
_METRIC_COLUMNS = (
    "source_rtt_ms",
    "read_seconds",
    "read_mb",
    "retention_watermark_ts",
    "retention_headroom_hours",
    "source_max_commit_ts",
    "capture_lag_seconds",
    "ingestion_lag_seconds",
)


def test_a_table_s_facts_row_holds_its_read_s_metrics_as_its_single_stream_s(
    spark, source, tmp_path
):
    """A range read on the driver writes its metrics files to the table's own directory under
    the query's checkpoint; the table's facts row folds them: the metric columns its single
    stream's row has, and the directory left empty after the batch."""
    _both_changed(source)
    db = _Db(spark, source, tmp_path)
    db.run()
    query = stream(spark, source.options()).to_delta(
        str(tmp_path / "single"),
        "single-orders",
        str(tmp_path / "chk-single"),
        str(tmp_path / "facts-single"),
        trigger={"availableNow": True},
    )
    query.awaitTermination(600)

    def metrics(facts: str, sink_id: str) -> dict[str, object]:
        [row] = (
            spark.read.format("delta")
            .load(facts)
            .where(f"app_id = '{sink_id}' AND event IS NULL")
            .collect()
        )
        return {c: row[c] for c in _METRIC_COLUMNS}

    ours = metrics(db.facts, "t-dbo_orders")
    single = metrics(str(tmp_path / "facts-single"), "single-orders")
    assert {c for c, v in ours.items() if v is None} == {c for c, v in single.items() if v is None}
    assert ours["read_mb"] > 0
    assert ours["source_rtt_ms"] is not None
    assert ours["source_max_commit_ts"] == single["source_max_commit_ts"]
    table_dir = tmp_path / "chk" / "db" / "_mssql_cdc_metrics" / "t-dbo_orders"
    assert table_dir.is_dir()
    assert list(table_dir.iterdir()) == []


def test_one_run_asks_for_the_cleanup_retention_once_for_all_its_reads(
    spark, source, emulator, tmp_path
):
    """Each read on the driver writes its metrics with the cleanup job's retention (for the
    headroom column); the run keeps one reader of it for all its reads, which asks SQL Server
    at most once an hour, not once per table read."""
    _both_changed(source)
    before = emulator.statement_count("sp_cdc_help_jobs")
    _Db(spark, source, tmp_path).run()  # both tables read in one batch
    assert emulator.statement_count("sp_cdc_help_jobs") - before == 1


@pytest.mark.parametrize(
    ("stop_at", "landed"),
    [
        # the second table's bronze commit is about to start: the first table's landed
        (("batch", "before", 2), ["dbo_orders"]),
        # both tables' bronze commits landed, the batch's facts commit has not
        (("database_facts", "before", 1), ["dbo_orders", "dbo_other"]),
    ],
    ids=["between-two-tables", "before-the-facts-commit"],
)
def test_a_kill_inside_a_batch_lands_each_table_once(spark, source, tmp_path, stop_at, landed):
    _both_changed(source)
    db = _Db(spark, source, tmp_path)
    calls = _run_stopping_at(db, ["dbo_orders", "dbo_other"], *stop_at)
    assert calls.count(("batch", "after")) == len(landed)
    assert db.batch_rows("t-dbo_orders") == []  # no table's facts row landed
    db.run()  # Spark replays the batch: what landed is skipped, the rest written once
    assert len(db.rows("dbo_orders", ["_start_lsn"])) == len(source.changes())
    assert len(db.rows("dbo_other", ["_start_lsn"])) == len(_other_changes(source))
    assert [r for _, r in db.batch_rows("t-dbo_orders")] == [len(source.changes())]
    assert [r for _, r in db.batch_rows("t-dbo_other")] == [3]


def test_a_table_moves_from_a_single_stream_into_the_database_stream(spark, source, tmp_path):
    source.workload(1)
    db = _Db(spark, source, tmp_path)
    options = source.options()
    for first in (10, 20):  # two single-stream batches: its batch ids 0 and 1
        query = stream(spark, options).to_delta(
            db.bronze("dbo_orders"),
            "t-dbo_orders",
            str(tmp_path / "chk-single"),
            db.facts,
            trigger={"availableNow": True},
        )
        query.awaitTermination(600)
        source.workload(first)
    db.run()
    assert len(db.rows("dbo_orders", ["_start_lsn"])) == len(source.changes())
    ids = [b for b, _ in db.batch_rows("t-dbo_orders")]
    assert ids == [0, 1, 2]  # it goes on after the single stream's batches
    source.workload(30)
    db.run()
    assert len(db.rows("dbo_orders", ["_start_lsn"])) == len(source.changes())
    rows = db.rows("dbo_orders", ["_start_lsn", "_seqval", "_operation", "_command_id"])
    assert rows == [c[:4] for c in source.changes()]

    # and back: its single stream goes on from a seeded checkpoint at its newest batch
    last = db.leave("dbo_orders", tmp_path / "chk-back")
    assert last == db.batch_rows("t-dbo_orders")[-1][0]
    source.workload(40)
    db.single("dbo_orders", tmp_path / "chk-back")
    rows = db.rows("dbo_orders", ["_start_lsn", "_seqval", "_operation", "_command_id"])
    assert rows == [c[:4] for c in source.changes()]
    assert db.batch_rows("t-dbo_orders")[-1] == (last + 1, 11)
    source.workload(50)
    db.run(["dbo_other"])  # the database stream goes on without it
    members = spark.read.format("delta").load(db.facts).where("event LIKE 'database_%'")
    kinds = [(r["app_id"], r["event"]) for r in members.orderBy("written_at").collect()]
    assert kinds == [
        ("t-dbo_orders", "database_joined"),
        ("t-dbo_other", "database_joined"),
        ("t-dbo_orders", "database_left"),
    ]


def test_an_idle_table_gets_heartbeat_rows_at_the_rate_asked(spark, source, tmp_path):
    source.workload(1)
    db = _Db(spark, source, tmp_path)
    db.run(heartbeat_seconds=0)
    assert [r for _, r in db.batch_rows("t-dbo_other")] == [0]  # its first batch: empty
    _other(source, 1)
    source.scan()
    db.run(heartbeat_seconds=0)
    source.workload(10)
    db.run(heartbeat_seconds=0)  # dbo_other idle: a 0-row row ending at the batch's end
    rows = spark.read.format("delta").load(db.facts).where("app_id = 't-dbo_other'")
    got = [
        (r["rows"], r["end_lsn"]) for r in rows.where("event IS NULL").orderBy("batch_id").collect()
    ]
    assert [n for n, _ in got] == [0, 3, 0]
    assert got[-1][1] == _max_lsn(source)
    db.run(heartbeat_seconds=3600)  # nothing new: no batch
    source.workload(20)
    db.run(heartbeat_seconds=3600)  # idle, and its last row is recent: no row
    again = [r["rows"] for r in rows.where("event IS NULL").collect()]
    assert len(again) == 3


def _commits(source) -> list[str]:
    """Every commit CDC recorded, database-wide (``cdc.lsn_time_mapping``), as 0x text."""
    rows = source.sql("SELECT start_lsn AS l FROM cdc.lsn_time_mapping ORDER BY start_lsn")
    return ["0x" + r["l"].hex().upper() for r in rows]


def test_max_commits_per_batch_bounds_every_table_s_batch(spark, source, tmp_path, caplog):
    """Spark 4.2+: after a new checkpoint's first batch (to the newest commit: each table
    starts where its own start says), each database batch spans at most
    ``maxCommitsPerBatch`` commits of the database, every table's range within it; Spark
    4.0/4.1: every batch to the newest commit, and one WARNING at the start saying so."""
    from mssql_cdc.source.datasource import HAS_ADMISSION_CONTROL

    caplog.set_level("WARNING", logger="mssql_cdc")
    _both_changed(source)  # dbo.orders' four transactions, dbo.other's two, in one scan
    db = _Db(spark, source, tmp_path)
    db.options["maxCommitsPerBatch"] = "2"
    first = _ends(db.run())
    assert len(first) == 1  # not bounded
    first_end = first[0]["lsn"]
    assert len([c for c in _commits(source) if c <= first_end]) > 2
    source.workload(10, scan=False)
    _other(source, 2)
    source.scan()
    query = db.run()
    ends = [e["lsn"] for e in _ends(query)]
    commits = [c for c in _commits(source) if first_end < c <= ends[-1]]
    assert len(commits) >= 5
    low, spans = first_end, []
    for end in ends:
        spans.append(len([c for c in commits if low < c <= end]))
        low = end
    ignored = [r for r in caplog.records if "maxCommitsPerBatch=2 has no effect" in r.getMessage()]
    if HAS_ADMISSION_CONTROL:
        assert spans == [2] * (len(commits) // 2) + ([len(commits) % 2] if len(commits) % 2 else [])
        assert not ignored
    else:
        assert spans == [len(commits)]
        assert len(ignored) == 2  # once per start
    order_cols = ["_start_lsn", "_seqval", "_operation", "_command_id"]
    assert db.rows("dbo_orders", order_cols) == [c[:4] for c in source.changes()]
    assert db.rows("dbo_other", ["_start_lsn", "_operation", "id", "note"]) == _other_changes(
        source
    )
    # each table's rows: one facts row per batch that read it, each ending at its batch's end
    facts = spark.read.format("delta").load(db.facts).where("event IS NULL AND rows > 0")
    for sink_id in ("t-dbo_orders", "t-dbo_other"):
        got = facts.where(f"app_id = '{sink_id}'").collect()
        assert sum(r["rows"] for r in got) == (
            len(source.changes()) if sink_id == "t-dbo_orders" else 6
        )
        assert {r["end_lsn"] for r in got} <= {first_end, *ends}


@pytest.mark.parametrize("starting", ["earliest", "latest"])
def test_a_table_enabled_while_a_bounded_stream_is_behind_waits_for_its_instance(
    spark, source, tmp_path, starting
):
    """Its capture instance begins after the bounded batch it joins in: it is not read (an
    empty range below its instance would leave its position below the instance's start, taken
    for a loss) until the batches reach its first change; ``latest`` then starts just below
    it. Spark 4.0/4.1 (no bound): every batch reaches it at once."""
    _both_changed(source)
    db = _Db(spark, source, tmp_path)
    db.options["maxCommitsPerBatch"] = "2"
    db.run()
    source.workload(10, scan=False)
    source.workload(20, scan=False)
    source.sql("CREATE TABLE dbo.late (id int NOT NULL PRIMARY KEY, v nvarchar(20) NULL)")
    source.sql(
        "EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N'late', "
        "@role_name = NULL"
    )
    source.sql("INSERT INTO dbo.late VALUES (1, N'n1'), (2, N'n2')")
    source.sql("UPDATE dbo.late SET v = N'u1' WHERE id = 1")
    source.scan()
    query = start_database(
        spark,
        db.options,
        {"dbo_orders": None, "dbo_other": None, "dbo_late": {"startingLsn": starting}},
        target=str(tmp_path / "bronze" / "{ci}"),
        app_id="t-{ci}",
        checkpoint=str(tmp_path / "chk" / db.name),
        facts_table=db.facts,
        name=db.name,
        trigger={"availableNow": True},
    )
    query.awaitTermination(600)
    assert query.exception() is None
    assert parked_tables(spark, name=db.name, facts_table=db.facts) == {}
    late = source.sql("SELECT __$start_lsn AS l, __$operation AS o, id, v FROM cdc.dbo_late_CT")
    want = sorted(("0x" + r["l"].hex().upper(), r["o"], r["id"], r["v"]) for r in late)
    got = db.rows("dbo_late", ["_start_lsn", "_operation", "id", "v"])
    assert sorted(got) == want
    assert len(want) == 4
    assert len(db.rows("dbo_orders", ["_start_lsn"])) == len(source.changes())


def _ends(query) -> list[dict[str, str]]:
    """The end offset of each batch of the query's run that ran, in order."""
    ran = [p for p in query.recentProgress if "addBatch" in p["durationMs"]]
    return [e for e in (end_offset_from_progress(p) for p in ran) if e is not None]


def _max_lsn(source) -> str:
    value = source.sql("SELECT sys.fn_cdc_get_max_lsn() AS l")[0]["l"]
    return "0x" + value.hex().upper()


def test_finalize_database_moves_each_table_to_where_it_landed(spark, source, tmp_path):
    """After an availableNow run every table is complete up to the run's end: each verdict is
    the single-table rule's on the query's last end offset; a second call moves nothing."""
    _both_changed(source)
    db = _Db(spark, source, tmp_path)
    query = db.run()
    control = str(tmp_path / "control")
    expected = candidate(end_offset_from_progress(query.lastProgress))
    assert expected is not None
    verdicts = finalize_database(spark, control, name="db", facts_table=db.facts)
    assert verdicts == {db.bronze("dbo_orders"): expected, db.bronze("dbo_other"): expected}
    version = spark.sql(f"DESCRIBE HISTORY delta.`{control}`").agg({"version": "max"}).first()[0]
    assert finalize_database(spark, control, name="db", facts_table=db.facts) == verdicts
    after = spark.sql(f"DESCRIBE HISTORY delta.`{control}`").agg({"version": "max"}).first()[0]
    assert after == version  # nothing moved: no MERGE
    with pytest.raises(ValueError, match="no table of a database stream named 'dbx'"):
        finalize_database(spark, control, name="dbx", facts_table=db.facts)


def test_a_failing_table_is_parked_and_the_others_go_on(spark, source, tmp_path):
    source.workload(1)
    db = _Db(spark, source, tmp_path)
    query = db.start(trigger={"processingTime": "1 second"})
    control = str(tmp_path / "control")
    tracker = track_database(spark, query, control, facts_table=db.facts)
    try:
        query.processAllAvailable()
        # the DBA disables CDC on dbo.other while the stream runs: its instance is gone
        source.sql(
            "EXEC sys.sp_cdc_disable_table @source_schema = N'dbo', @source_name = N'other', "
            "@capture_instance = N'dbo_other'"
        )
        source.workload(10)
        query.processAllAvailable()
        assert query.isActive
        source.workload(20)
        query.processAllAvailable()
    finally:
        query.stop()
    assert query.exception() is None
    assert len(db.rows("dbo_orders", ["_start_lsn"])) == len(source.changes())
    facts = spark.read.format("delta").load(db.facts)
    parked = facts.where("event = 'table_parked'").collect()
    assert [r["app_id"] for r in parked] == ["t-dbo_other"]  # recorded once, not per batch
    assert json.loads(parked[0]["detail"])["capture_instance"] == "dbo_other"
    found = parked_tables(spark, name="db", facts_table=db.facts)
    assert list(found) == ["dbo_other"]
    assert "dbo_other" in found["dbo_other"]  # the error names the instance it could not read
    # finalization after every batch: the parked table's verdict stays where it landed
    assert tracker.join(timeout=120)
    assert tracker.last_error is None
    verdicts = finalize_database(spark, control, name="db", facts_table=db.facts)
    assert sorted(verdicts) == [db.bronze("dbo_orders"), db.bronze("dbo_other")]
    newest = facts.where("app_id = 't-dbo_orders' AND event IS NULL").orderBy("batch_id").collect()
    assert verdicts[db.bronze("dbo_orders")] == truncate(newest[-1]["end_commit_ts"])
    assert (
        finalized_until(spark, control, db.bronze("dbo_orders"))
        == verdicts[db.bronze("dbo_orders")]
    )
    assert verdicts[db.bronze("dbo_other")] == truncate(
        facts.where("app_id = 't-dbo_other' AND event IS NULL")
        .orderBy("batch_id")
        .collect()[-1]["end_commit_ts"]
    )


def test_the_command_line_runs_a_schema_as_one_database_stream(
    spark, source, tmp_path, monkeypatch, capsys
):
    from mssql_cdc.cli import main

    _both_changed(source)
    monkeypatch.setenv("MSSQL_CDC_PASSWORD", source.server.password)
    argv = ["stream", "--connection-string", source.connection_string, "--user", "sa"]
    argv += ["--schema", "dbo", "--target", str(tmp_path / "b" / "{ci}"), "--app-id", "s-{ci}"]
    argv += ["--option", "numPartitions=1", "--facts-table", str(tmp_path / "facts")]
    chk = ["--checkpoint", str(tmp_path / "chk")]
    assert main([*argv, *chk, "--database-stream", "sales-db"]) == 0
    for ci, n in (("dbo_orders", len(source.changes())), ("dbo_other", 3)):
        assert spark.read.format("delta").load(str(tmp_path / "b" / ci)).count() == n
    out = capsys.readouterr().out
    assert "sales-db: 1 database batch ran" in out
    # the progress, one line per batch that read a table (the tables in the order they landed)
    landed = len(source.changes()) + 3
    tables = r"\((dbo_orders, dbo_other|dbo_other, dbo_orders)\)"
    assert re.search(rf"sales-db: batch 0 read 2 tables {tables}, {landed} rows, to 0x", out)
    # refused before anything starts, naming the argument
    bad = ["--checkpoint", str(tmp_path / "c" / "{ci}"), "--database-stream", "sales-db"]
    assert main([*argv, *bad]) == 2
    assert "a database stream has one checkpoint" in capsys.readouterr().err


def test_a_replayed_batch_whose_facts_landed_is_skipped_and_a_table_added_meanwhile_lands_once(
    spark, source, tmp_path
):
    """The batch's facts commit landed, Spark's commit log entry did not: the restarted run,
    with a table added, replays the batch and writes nothing; the added table (and the new
    changes) come in the next batch, once."""
    source.workload(1)
    db = _Db(spark, source, tmp_path)
    _run_stopping_at(db, ["dbo_orders"], "database_facts", "after")
    assert [r for _, r in db.batch_rows("t-dbo_orders")] == [len(source.changes())]
    _other(source, 1)
    source.workload(10)
    db.run()
    assert db.rows("dbo_orders", ["_start_lsn", "_seqval", "_operation", "_command_id"]) == [
        c[:4] for c in source.changes()
    ]
    assert len(db.rows("dbo_other", ["_start_lsn"])) == 3
    assert [r for _, r in db.batch_rows("t-dbo_other")] == [3]
    assert sum(r for _, r in db.batch_rows("t-dbo_orders")) == len(source.changes())


def test_a_table_with_a_batch_in_bronze_but_not_in_the_facts_cannot_leave(spark, source, tmp_path):
    """Stopped between a table's bronze commit and the batch's facts commit: the table cannot
    be left out (its batch would never get its facts row, and a later read would write its
    rows again) nor moved to a single stream until a run with it listed finishes the batch."""
    source.workload(1)
    db = _Db(spark, source, tmp_path)
    _run_stopping_at(db, ["dbo_orders", "dbo_other"], "batch", "after")
    assert len(db.rows("dbo_orders", ["_start_lsn"])) == len(source.changes())
    assert db.batch_rows("t-dbo_orders") == []
    with pytest.raises(Exception, match="without its facts row"):
        db.run(["dbo_other"])
    with pytest.raises(ValueError, match="without its facts row"):
        leave_database(
            spark,
            name="db",
            target=db.bronze("dbo_orders"),
            app_id="t-dbo_orders",
            facts_table=db.facts,
            database_checkpoint=str(tmp_path / "chk" / "db"),
            checkpoint=str(tmp_path / "chk-single"),
        )
    db.run()  # listed again: the replay writes the batch's facts row, nothing twice
    assert len(db.rows("dbo_orders", ["_start_lsn"])) == len(source.changes())
    assert [r for _, r in db.batch_rows("t-dbo_orders")] == [len(source.changes())]


def test_a_checkpoint_replaced_under_the_same_name_is_refused(spark, source, tmp_path):
    import shutil

    source.workload(1)
    db = _Db(spark, source, tmp_path)
    db.run()
    source.workload(10)
    db.run()
    shutil.rmtree(tmp_path / "chk" / "db")
    source.workload(20)
    with pytest.raises(Exception, match="deleted or rewound under the same name"):
        db.run()
    assert sum(r for _, r in db.batch_rows("t-dbo_orders")) == len(source.changes()) - 11
    db.name = "db-2"  # a new name for the new checkpoint: each table goes on where it was
    db.run()
    assert db.rows("dbo_orders", ["_start_lsn", "_seqval", "_operation", "_command_id"]) == [
        c[:4] for c in source.changes()
    ]


def test_a_name_that_is_a_stream_s_app_id_is_refused(spark, source, tmp_path):
    source.workload(1)
    db = _Db(spark, source, tmp_path, name="t-dbo_orders-single")
    query = stream(spark, source.options()).to_delta(
        str(tmp_path / "single"),
        "t-dbo_orders-single",
        str(tmp_path / "chk-single"),
        db.facts,
        trigger={"availableNow": True},
    )
    query.awaitTermination(600)
    with pytest.raises(ValueError, match="records it as a stream's app_id"):
        db.run()


def test_a_range_above_the_driver_read_bound_is_read_by_spark(spark, source, tmp_path, monkeypatch):
    from mssql_cdc.source import local_read

    monkeypatch.setattr(local_read, "LOCAL_ROWS", 4)
    seen: list[bool] = []
    read = local_read.read_locally

    def counting(options, schema=None, end_commit_ts="", retention=None):
        found = read(options, schema, end_commit_ts, retention)
        seen.append(found is not None)
        return found

    monkeypatch.setattr(local_read, "read_locally", counting)
    source.workload(1, scan=False)
    source.sql("INSERT INTO dbo.other VALUES (1, N'x')")
    source.scan()
    db = _Db(spark, source, tmp_path)
    db.run()
    assert sorted(seen) == [False, True]  # dbo_orders' 11 rows by spark.read, dbo_other's 1 here
    assert db.rows("dbo_orders", ["_start_lsn", "_seqval", "_operation", "_command_id"]) == [
        c[:4] for c in source.changes()
    ]


# -- bootstrap --------------------------------------------------------------------------------


def _snapshot_rows(spark, path: str) -> int:
    return spark.read.format("delta").load(path).where("_operation = 0").count()


def test_a_bootstrap_takes_each_new_table_s_snapshot_then_only_its_changes(
    spark, source, tmp_path, monkeypatch
):
    _both_changed(source)
    db = _Db(spark, source, tmp_path)
    db.run(bootstrap=True)
    # each table's rows as a snapshot, none of the changes before it
    assert latest_images(spark, db.bronze("dbo_orders")) == source.table()
    taken = len(source.table())
    assert _snapshot_rows(spark, db.bronze("dbo_orders")) == taken
    assert db.rows("dbo_other", ["_operation", "id", "note"]) == [(0, 1, "u1")]
    events = spark.read.format("delta").load(db.facts).where("app_id = 't-dbo_orders'")
    kinds = sorted(r["event"] for r in events.where("event IS NOT NULL").collect())
    assert kinds == ["bootstrap", "database_joined", "snapshot_open"]

    # a rerun takes no snapshot again (nor looks for one): the tables joined; only their new
    # changes land
    source.workload(100)
    _other(source, 2)
    source.scan()
    from mssql_cdc.pipeline import start as start_module

    asked: list[str] = []
    real = start_module.take_bootstrap

    def spy(reader, ledger, *, chunked):
        asked.append(ledger.app_id)
        return real(reader, ledger, chunked=chunked)

    monkeypatch.setattr(start_module, "take_bootstrap", spy)
    db.run(bootstrap=True)
    assert asked == []
    assert _snapshot_rows(spark, db.bronze("dbo_orders")) == taken
    assert latest_images(spark, db.bronze("dbo_orders")) == source.table()
    assert db.rows("dbo_other", ["_operation", "id", "note"]) == [
        (0, 1, "u1"),
        (2, 2, "n2"),
        (3, 2, "n2"),
        (4, 2, "u2"),
    ]
    assert parked_tables(spark, name="db", facts_table=db.facts) == {}


def _refuse_bootstrap(monkeypatch, sink_id: str):
    """The bootstrap of ``sink_id``'s table fails as a revoked grant would (229); the others
    are taken. Returns the function that gives the grant back."""
    from mssql_cdc.pipeline import start as start_module

    real = start_module.take_bootstrap

    def refused(reader, ledger, *, chunked):
        if ledger.app_id == sink_id:
            raise PermissionError("SELECT permission was denied on the object 'other' (229)")
        return real(reader, ledger, chunked=chunked)

    monkeypatch.setattr(start_module, "take_bootstrap", refused)
    return lambda: monkeypatch.setattr(start_module, "take_bootstrap", real)


def test_a_table_whose_bootstrap_fails_is_parked_and_bootstrapped_on_the_next_run(
    spark, source, tmp_path, monkeypatch
):
    _both_changed(source)
    db = _Db(spark, source, tmp_path)
    undo = _refuse_bootstrap(monkeypatch, "t-dbo_other")
    db.run(bootstrap=True)
    assert latest_images(spark, db.bronze("dbo_orders")) == source.table()
    parked = parked_tables(spark, name="db", facts_table=db.facts)
    assert list(parked) == ["dbo_other"]
    assert "permission was denied" in parked["dbo_other"]
    assert not (tmp_path / "bronze" / "dbo_other").exists()
    # still refused, and nothing new: no batch runs, the failure is recorded all the same
    before = spark.read.format("delta").load(db.facts).where("event = 'table_parked'").count()
    db.run(bootstrap=True)
    facts = spark.read.format("delta").load(db.facts)
    assert facts.where("event = 'table_parked'").count() == before + 1
    assert list(parked_tables(spark, name="db", facts_table=db.facts)) == ["dbo_other"]

    undo()  # the grant is back
    _other(source, 2)
    source.scan()
    db.run(bootstrap=True)
    # its snapshot (both rows), nothing before it; idle since: a 0-row row ends its parking
    assert db.rows("dbo_other", ["_operation", "id", "note"]) == [(0, 1, "u1"), (0, 2, "u2")]
    assert [r for _, r in db.batch_rows("t-dbo_other")] == [0]
    assert parked_tables(spark, name="db", facts_table=db.facts) == {}
    assert latest_images(spark, db.bronze("dbo_orders")) == source.table()


def test_a_table_parked_at_its_bootstrap_and_then_left_out_is_no_longer_listed(
    spark, source, tmp_path, monkeypatch
):
    source.workload(1)
    db = _Db(spark, source, tmp_path)
    _refuse_bootstrap(monkeypatch, "t-dbo_other")
    db.run(bootstrap=True)
    assert list(parked_tables(spark, name="db", facts_table=db.facts)) == ["dbo_other"]
    source.workload(10)
    db.run(["dbo_orders"], bootstrap=True)  # the table is left out of the list
    assert parked_tables(spark, name="db", facts_table=db.facts) == {}
    assert latest_images(spark, db.bronze("dbo_orders")) == source.table()


def test_a_bootstrapped_table_whose_join_landed_goes_on_from_its_snapshot_after_a_crash(
    spark, source, tmp_path
):
    """The stream stops after the tables' joining landed and before the batch's facts commit;
    the next run, even without ``bootstrap=True``, starts each table where its join recorded
    (its snapshot's LSN), not from its whole change table."""
    _both_changed(source)
    db = _Db(spark, source, tmp_path)
    calls = _run_stopping_at(
        db, ["dbo_orders", "dbo_other"], "database_facts", "before", bootstrap=True
    )
    assert ("database_members", "after") in calls
    db.run()
    assert db.rows("dbo_other", ["_operation", "id", "note"]) == [(0, 1, "u1")]
    assert latest_images(spark, db.bronze("dbo_orders")) == source.table()
    assert db.rows("dbo_orders", ["_operation"]) == [(0,)] * len(source.table())


def test_a_chunked_bootstrap_opens_each_table_s_snapshot_and_backfill_fills_it(
    spark, source, tmp_path
):
    _both_changed(source)
    db = _Db(spark, source, tmp_path)
    db.run(bootstrap=True, snapshot="chunked")
    assert not (tmp_path / "bronze" / "dbo_orders").exists()  # opened, not read yet
    source.workload(100)
    db.run(bootstrap=True, snapshot="chunked")  # the stream goes on beside the open snapshots
    for ci in ("dbo_orders", "dbo_other"):
        cdc = stream(spark, {**db.options, "captureInstance": ci})
        status = cdc.backfill(db.bronze(ci), app_id=f"t-{ci}", facts_table=db.facts)
        assert status.state == "done"
    assert latest_images(spark, db.bronze("dbo_orders")) == source.table()
    assert _snapshot_rows(spark, db.bronze("dbo_other")) == 1


# -- a table's capture-instance switch ----------------------------------------------------------


def test_a_table_follows_the_add_column_playbook_while_the_stream_runs(spark, source, tmp_path):
    """The DBA's playbook (docs/schema-changes.md) on one table of a running database stream:
    a column added, a second capture instance with it, the old one disabled. The stream finds
    the newer instance's changes, reads the table with the union schema (bronze gains the
    column), follows the default name to the newer instance, and never stops or parks."""
    from _pipeline import bronze_changes
    from mssql_cdc import Lsn

    source.workload(1)
    db = _Db(spark, source, tmp_path)
    query = db.start(trigger={"processingTime": "1 second"})
    try:
        query.processAllAvailable()
        source.sql("ALTER TABLE dbo.orders ADD note nvarchar(20) NULL")
        source.sql("INSERT INTO dbo.orders (id, name, qty, note) VALUES (50, N'n', 5, N'before')")
        source.scan()
        query.processAllAvailable()

        source.sql(ORDERS_V2)
        start_v2 = source.instance_start("dbo_orders_v2")
        source.sql("INSERT INTO dbo.orders (id, name, qty, note) VALUES (51, N'm', 6, N'after')")
        source.sql("UPDATE dbo.orders SET note = N'changed' WHERE id = 51")
        source.scan()
        query.processAllAvailable()

        old_history = [r for r in source.changes("dbo_orders") if Lsn.parse(r[0]) < start_v2]
        source.sql(DISABLE_ORDERS_V1)
        source.sql("INSERT INTO dbo.orders (id, name, qty, note) VALUES (52, N'k', 7, N'last')")
        source.sql("DELETE FROM dbo.orders WHERE id = 2")
        source.scan()
        query.processAllAvailable()
        assert query.isActive
    finally:
        query.stop()
    assert query.exception() is None
    assert parked_tables(spark, name="db", facts_table=db.facts) == {}
    assert bronze_changes(spark, db.bronze("dbo_orders")) == old_history + source.changes(
        "dbo_orders_v2"
    )
    bronze = spark.read.format("delta").load(db.bronze("dbo_orders"))
    notes = {r["id"]: r["note"] for r in bronze.where("_operation IN (2, 4)").collect()}
    assert notes[51] == "changed"
    assert notes[52] == "last"
    # the reads' events are the table's facts rows, as its single stream records them (beside
    # the stream's own membership rows)
    events = (
        spark.read.format("delta")
        .load(db.facts)
        .where("app_id = 't-dbo_orders' AND event IS NOT NULL")
        .where("event IN ('schema_change', 'capture_instance_switched')")
        .orderBy("batch_id", "min_lsn")
        .collect()
    )
    assert [e["event"] for e in events] == ["schema_change", "capture_instance_switched"]
    ddl, switched = events
    assert "note" in ddl["detail"]
    assert switched["detail"] == "dbo_orders -> dbo_orders_v2"
    assert switched["min_lsn"] == switched["max_lsn"] == str(start_v2)


# -- re-snapshots after data loss ---------------------------------------------------------------


def _purge_while_stopped(source, emulator, first_id: int) -> None:
    """Changes of dbo.orders captured while the stream is stopped, then two days later more,
    and CDC cleanup purging the first ones (retention one hour; dbo.other's change table is
    cleaned up too)."""
    import datetime as dt

    source.sql(f"UPDATE dbo.orders SET qty = qty + 100 WHERE id < {first_id}")
    source.sql(f"INSERT INTO dbo.orders VALUES ({first_id}, N'lost', 1)")
    source.scan()
    emulator.advance_clock(dt.timedelta(days=2))
    source.sql(f"INSERT INTO dbo.orders VALUES ({first_id + 1}, N'kept', 2)")
    source.sql(f"UPDATE dbo.orders SET name = N'late' WHERE id = {first_id}")
    _other(source, first_id)
    source.scan()
    assert emulator.cleanup(retention_minutes=60) > 0


def _rebuilt(spark, path: str, columns: tuple[str, ...]) -> list[tuple[object, ...]]:
    """What a downstream table rebuilds from bronze's newest snapshot: its rows, then every
    change after it in commit order; the latest image per key, deleted keys left out."""
    df = spark.read.format("delta").load(path)
    snapshot = df.where("_operation = 0").agg({"_snapshot": "max"}).collect()[0][0]
    base = df.where(f"_operation = 0 AND _snapshot = '{snapshot}'").collect()
    changes = df.where(f"_operation <> 0 AND _start_lsn > '{snapshot}'").orderBy(*ORDER).collect()
    latest = {r["id"]: r for r in base}
    for r in changes:
        latest[r["id"]] = r
    return sorted(tuple(r[c] for c in columns) for r in latest.values() if r["_operation"] != 1)


def _members(spark, facts: str) -> list[tuple[str, str]]:
    rows = spark.read.format("delta").load(facts).where("event LIKE 'database_%'").collect()
    return sorted((r["app_id"], r["event"]) for r in rows)


def test_a_table_whose_changes_were_purged_is_re_snapshotted_into_its_next_generation(
    spark, source, emulator, tmp_path
):
    source.workload(1, scan=False)
    _other(source, 1)
    source.scan()
    db = _Db(spark, source, tmp_path)
    db.run(bootstrap=True)
    _purge_while_stopped(source, emulator, 10)

    # with on_data_loss="fail" (the default) both tables are parked with the data-loss error
    db.run()
    assert sorted(parked_tables(spark, name="db", facts_table=db.facts)) == [
        "dbo_orders",
        "dbo_other",
    ]

    db.run(on_data_loss="resnapshot")
    facts = spark.read.format("delta").load(db.facts)
    resnapshots = facts.where("event = 'resnapshot'").collect()
    assert sorted(r["app_id"] for r in resnapshots) == ["t-dbo_orders.g1", "t-dbo_other.g1"]
    assert all(r["lost_from_ts"] is not None for r in resnapshots)
    assert _rebuilt(spark, db.bronze("dbo_orders"), ("id", "name", "qty")) == source.table()
    notes = source.sql("SELECT id, note FROM dbo.other ORDER BY id")
    assert _rebuilt(spark, db.bronze("dbo_other"), ("id", "note")) == [
        (r["id"], r["note"]) for r in notes
    ]
    assert parked_tables(spark, name="db", facts_table=db.facts) == {}  # re-snapshotted
    table_dir = tmp_path / "chk" / "db" / "_mssql_cdc_tables" / "t-dbo_orders"
    state = json.loads((table_dir / "_mssql_cdc_generation.json").read_text())
    assert state["generation"] == 1
    assert "recovering" not in state

    # the next run goes on in generation 1 (on_data_loss="fail" too): the new changes once
    source.workload(30)
    db.run()
    assert _members(spark, db.facts) == [  # the new generations joined, the old ones left
        ("t-dbo_orders", "database_joined"),
        ("t-dbo_orders", "database_left"),
        ("t-dbo_orders.g1", "database_joined"),
        ("t-dbo_other", "database_joined"),
        ("t-dbo_other", "database_left"),
        ("t-dbo_other.g1", "database_joined"),
    ]
    assert _rebuilt(spark, db.bronze("dbo_orders"), ("id", "name", "qty")) == source.table()
    g1 = db.batch_rows("t-dbo_orders.g1")
    assert [b for b, _ in g1] == list(range(len(g1)))
    assert sum(n for _, n in g1) == 11  # workload(30)'s change rows, nothing of before
    assert len(facts.where("event = 'resnapshot'").collect()) == 2  # no second re-snapshot

    # and out: its single stream goes on in generation 1 from a seeded checkpoint
    last = db.leave("dbo_orders", tmp_path / "chk-out")
    assert last == g1[-1][0]
    source.workload(40)
    query = db.single("dbo_orders", tmp_path / "chk-out")
    assert query.name == "t-dbo_orders.g1"
    assert db.batch_rows("t-dbo_orders.g1")[-1] == (last + 1, 11)
    assert _rebuilt(spark, db.bronze("dbo_orders"), ("id", "name", "qty")) == source.table()


def test_a_second_loss_within_the_interval_parks_the_table(spark, source, emulator, tmp_path):
    source.workload(1)
    db = _Db(spark, source, tmp_path)
    db.run(["dbo_orders"], bootstrap=True)
    _purge_while_stopped(source, emulator, 10)
    db.run(["dbo_orders"], on_data_loss="resnapshot", snapshot="chunked")
    facts = spark.read.format("delta").load(db.facts)
    opened = facts.where("event = 'snapshot_open' AND app_id = 't-dbo_orders.g1'").collect()
    assert len(opened) == 1  # chunked: opened for backfill(), read by it
    _purge_while_stopped(source, emulator, 20)
    db.run(["dbo_orders"], on_data_loss="resnapshot", resnapshot_interval_days=7)
    found = parked_tables(spark, name="db", facts_table=db.facts)
    assert list(found) == ["dbo_orders"]
    assert "resnapshot_interval_days=7" in found["dbo_orders"]


def test_a_table_killed_inside_a_batch_and_then_purged_is_re_snapshotted(
    spark, source, emulator, tmp_path
):
    source.workload(1)
    db = _Db(spark, source, tmp_path)
    db.run(["dbo_orders"])
    source.workload(5)
    # its bronze commit of the next batch landed, the batch's facts commit did not
    _run_stopping_at(db, ["dbo_orders"], "database_facts", "before")
    _purge_while_stopped(source, emulator, 10)
    db.run(["dbo_orders"], on_data_loss="resnapshot")
    source.workload(30)
    db.run(["dbo_orders"])  # the old generation leaves with its unfinished batch
    assert _rebuilt(spark, db.bronze("dbo_orders"), ("id", "name", "qty")) == source.table()
    assert ("t-dbo_orders", "database_left") in _members(spark, db.facts)
    assert sum(n for _, n in db.batch_rows("t-dbo_orders.g1")) == 11
    assert parked_tables(spark, name="db", facts_table=db.facts) == {}


@pytest.mark.parametrize(
    "stop_at",
    [
        ("snapshot_rows", "after"),  # the re-snapshot in bronze, its resnapshot row not
        ("snapshot_closed", "after"),  # its resnapshot row too, the generation not recorded
        ("database_members", "before"),  # all of it, the query's first batch not
    ],
    ids=["after-the-snapshot-rows", "after-the-resnapshot-row", "before-the-first-batch"],
)
def test_a_start_killed_inside_a_table_s_re_snapshot_finishes_it_once(
    spark, source, emulator, tmp_path, stop_at
):
    source.workload(1)
    db = _Db(spark, source, tmp_path)
    db.run(["dbo_orders"])
    _purge_while_stopped(source, emulator, 10)

    def hook(kind: str, when: str, txn: object) -> None:
        if (kind, when) == stop_at:
            raise _StopError(f"stopped at {kind} {when}")

    ledger_pkg.ledger.commit_hook = hook
    try:
        with pytest.raises(Exception, match=f"stopped at {stop_at[0]} {stop_at[1]}"):
            db.start(["dbo_orders"], on_data_loss="resnapshot").awaitTermination(600)
    finally:
        ledger_pkg.ledger.commit_hook = None
    db.run(["dbo_orders"], on_data_loss="resnapshot")
    source.workload(30)
    db.run(["dbo_orders"])
    facts = spark.read.format("delta").load(db.facts)
    closed = facts.where("event = 'resnapshot'").collect()
    assert [r["app_id"] for r in closed] == ["t-dbo_orders.g1"]  # one re-snapshot, once
    bronze = spark.read.format("delta").load(db.bronze("dbo_orders"))
    snapshot_rows = bronze.where(f"_operation = 0 AND _snapshot = '{closed[0]['end_lsn']}'")
    assert snapshot_rows.count() == closed[0]["rows"] > 0
    assert _rebuilt(spark, db.bronze("dbo_orders"), ("id", "name", "qty")) == source.table()
    assert sum(n for _, n in db.batch_rows("t-dbo_orders.g1")) == 11
