"""``start_many`` / ``await_all`` / ``stop_all``: many capture instances in one session, each
table's history landed once, a failure that stops one table alone, and the argument rules
(checked before anything starts)."""

from __future__ import annotations

import pytest

from mssql_cdc import await_all, start_many, stop_all
from mssql_cdc.pipeline.fanout import expand_template, table_options

# -- arguments (no Spark) -----------------------------------------------------------------------


def test_a_template_without_the_placeholder_names_the_argument():
    with pytest.raises(ValueError, match=r"checkpoint '/chk/x' must contain '\{ci\}'"):
        expand_template("checkpoint", "/chk/x", "dbo_orders")
    assert expand_template("target", "bronze.{ci}", "dbo_orders") == "bronze.dbo_orders"
    # only {ci} is a placeholder; other braces stay as written
    assert expand_template("checkpoint", "/c/{ci}/{1}", "a") == "/c/a/{1}"


def test_overrides_replace_shared_options_ignoring_case_and_set_the_capture_instance():
    shared = {"connectionString": "Server=x", "maxCommitsPerBatch": "10", "captureInstance": "z"}
    got = table_options(shared, {"MAXCOMMITSPERBATCH": "3"}, "dbo_orders")
    assert got == {
        "connectionString": "Server=x",
        "MAXCOMMITSPERBATCH": "3",
        "captureInstance": "dbo_orders",
    }


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
        ([""], {}, ValueError, r"'' is not a capture instance name"),
        ({"a": 3}, {}, TypeError, r"capture_instances\['a'\] must be a mapping"),
        (7, {}, TypeError, r"capture_instances must be"),
        (["a"], {"query_name": "q"}, ValueError, r"remove query_name"),
    ],
)
def test_bad_arguments_fail_before_anything_starts(instances, kwargs, error, message):
    args = {"target": "bronze.{ci}", "app_id": "app-{ci}", "checkpoint": "/tmp/chk/{ci}"}
    args.update(kwargs)
    with pytest.raises(error, match=message):
        start_many(_NoSpark(), {"connectionString": "Server=x"}, instances, **args)  # type: ignore[arg-type]


def test_await_all_refuses_a_negative_timeout():
    with pytest.raises(ValueError, match="timeout must be None or at least 0"):
        await_all({}, timeout=-1)


# -- with Spark and the emulator ----------------------------------------------------------------


def _other_changes(source) -> list[tuple[object, ...]]:
    rows = source.sql(
        "SELECT __$start_lsn AS l, __$operation AS o, id, note FROM "
        "cdc.fn_cdc_get_all_changes_dbo_other(sys.fn_cdc_get_min_lsn(N'dbo_other'), "
        "sys.fn_cdc_get_max_lsn(), N'all update old') "
        "ORDER BY __$start_lsn, __$seqval, __$operation"
    )
    return [("0x" + r["l"].hex().upper(), r["o"], r["id"], r["note"]) for r in rows]


def test_every_table_lands_its_history_once_and_shares_one_facts_table(spark, source, tmp_path):
    source.workload(1, scan=False)
    source.sql("INSERT INTO dbo.other VALUES (1, N'x'), (2, N'y')")
    source.sql("UPDATE dbo.other SET note = N'z' WHERE id = 2")
    source.scan()
    facts = tmp_path / "facts"
    options = source.options()
    del options["captureInstance"]
    queries = start_many(
        spark,
        options,
        {"dbo_orders": {"MaxCommitsPerBatch": "2"}, "dbo_other": None},
        target=str(tmp_path / "bronze" / "{ci}"),
        app_id="many-{ci}",
        checkpoint=str(tmp_path / "chk" / "{ci}"),
        facts_table=str(facts),
        trigger={"availableNow": True},
    )
    assert list(queries) == ["dbo_orders", "dbo_other"]
    assert [q.name for q in queries.values()] == ["many-dbo_orders", "many-dbo_other"]
    assert await_all(queries, timeout=600) == {}

    def bronze(ci: str, columns: list[str]) -> list[tuple[object, ...]]:
        df = spark.read.format("delta").load(str(tmp_path / "bronze" / ci))
        rows = df.orderBy("_start_lsn", "_command_id", "_seqval", "_operation").collect()
        return [tuple(r[c] for c in columns) for r in rows]

    orders = bronze("dbo_orders", ["_start_lsn", "_seqval", "_operation", "_command_id"])
    assert orders == [c[:4] for c in source.changes()]
    other = _other_changes(source)
    assert len(other) == 4  # two inserts, an update's before and after images
    assert bronze("dbo_other", ["_start_lsn", "_operation", "id", "note"]) == other

    batches = spark.read.format("delta").load(str(facts)).where("event IS NULL").collect()
    by_app: dict[str, int] = {}
    for row in batches:
        by_app[row["app_id"]] = by_app.get(row["app_id"], 0) + row["rows"]
    assert by_app == {"many-dbo_orders": len(orders), "many-dbo_other": len(other)}


def test_a_failed_table_stops_alone_and_await_all_returns_its_error(spark, source, tmp_path):
    source.workload(1)
    options = source.options()
    del options["captureInstance"]
    queries = start_many(
        spark,
        options,
        ["dbo_orders", "dbo_other"],
        target=str(tmp_path / "bronze" / "{ci}"),
        app_id="iso-{ci}",
        checkpoint=str(tmp_path / "chk" / "{ci}"),
        trigger={"processingTime": "1 second"},
    )
    try:
        for query in queries.values():
            query.processAllAvailable()
        # the DBA disables CDC on dbo.other while both streams run
        source.sql(
            "EXEC sys.sp_cdc_disable_table @source_schema = N'dbo', @source_name = N'other', "
            "@capture_instance = N'dbo_other'"
        )
        source.workload(100, scan=False)
        source.sql("INSERT INTO dbo.other VALUES (1, N'x')")
        source.scan()
        with pytest.raises(Exception, match="dbo_other"):
            queries["dbo_other"].awaitTermination(600)
        assert queries["dbo_orders"].isActive  # stopped alone
        queries["dbo_orders"].processAllAvailable()
    finally:
        stop_all(queries)
    failures = await_all(queries, timeout=60)
    assert list(failures) == ["dbo_other"]
    assert "dbo_other" in str(failures["dbo_other"])
    assert source.server.password not in str(failures["dbo_other"])
    df = spark.read.format("delta").load(str(tmp_path / "bronze" / "dbo_orders"))
    assert df.count() == len(source.changes())


def test_a_start_that_raises_stops_the_queries_already_started(spark, source, tmp_path):
    source.workload(1)
    options = source.options()
    del options["captureInstance"]
    # the second table's checkpoint already belongs to a query of another app_id: the names
    # clash in this session, so its start raises after the first has started
    first = start_many(
        spark,
        options,
        ["dbo_other"],
        target=str(tmp_path / "held" / "{ci}"),
        app_id="clash-{ci}",
        checkpoint=str(tmp_path / "held-chk" / "{ci}"),
        trigger={"processingTime": "1 hour"},
    )
    try:
        with pytest.raises(ValueError, match="already active"):
            start_many(
                spark,
                options,
                ["dbo_orders", "dbo_other"],
                target=str(tmp_path / "bronze" / "{ci}"),
                app_id="clash-{ci}",
                checkpoint=str(tmp_path / "chk" / "{ci}"),
                trigger={"processingTime": "1 hour"},
            )
        active = {q.name for q in spark.streams.active}
        assert active == {"clash-dbo_other"}  # dbo_orders' query was stopped again
    finally:
        stop_all(first)
    assert not [q for q in spark.streams.active if q.name.startswith("clash-")]


# -- the command line ---------------------------------------------------------------------------


def test_the_command_line_streams_every_table_of_a_schema(
    spark, source, tmp_path, monkeypatch, capsys
):
    from mssql_cdc.cli import main

    source.workload(1, scan=False)
    source.sql("INSERT INTO dbo.other VALUES (1, N'x')")
    source.scan()
    monkeypatch.setenv("MSSQL_CDC_PASSWORD", source.server.password)
    argv = ["stream", "--connection-string", source.connection_string, "--user", "sa"]
    argv += ["--schema", "DBO", "--target", str(tmp_path / "b" / "{ci}"), "--app-id", "s-{ci}"]
    argv += ["--checkpoint", str(tmp_path / "c" / "{ci}"), "--option", "numPartitions=1"]
    assert main(argv) == 0
    for ci, n in (("dbo_orders", len(source.changes())), ("dbo_other", 1)):
        assert spark.read.format("delta").load(str(tmp_path / "b" / ci)).count() == n
    # the progress off a terminal: one line per micro-batch that read changes, with Spark's
    # count of rows read (the first batch of a new bronze table adds the one row the sink
    # reads to learn it is not empty: ADR 0157)
    out = capsys.readouterr().out
    assert "s-dbo_other: batch 0 read 2 rows (" in out
    assert f"s-dbo_orders: batch 0 read {len(source.changes()) + 1} rows (" in out
    # one name for several queries is refused before anything starts
    capsys.readouterr()
    assert main([*argv, "--query-name", "q"]) == 2
    assert "--query-name names one query" in capsys.readouterr().err


def test_repeated_capture_instances_leave_the_option_to_each_stream():
    import io

    from mssql_cdc.cli import build_parser
    from mssql_cdc.cli.stream_command import options_from

    argv = ["stream", "--server", "db", "--capture-instance", "a", "--capture-instance", "b"]
    argv += ["--target", "t{ci}", "--app-id", "a{ci}", "--checkpoint", "/c/{ci}"]
    args = build_parser().parse_args(argv)
    assert args.capture_instance == ["a", "b"]
    assert "captureInstance" not in options_from(args, {}, io.StringIO())


def test_idle_streams_of_one_database_share_the_max_lsn_poll(spark, source, emulator, tmp_path):
    """Two idle streams in one session send fewer ``max_lsn`` polls than they run triggers
    (one per trigger without sharing, ADR 0170); each trigger is one progress event."""
    import datetime as dt
    import time

    source.workload(1)
    options = source.options()
    del options["captureInstance"]
    poll_text = "FROM cdc.lsn_time_mapping ORDER BY start_lsn DESC"
    spark.conf.set("spark.sql.streaming.noDataProgressEventInterval", "0")
    try:
        queries = start_many(
            spark,
            options,
            ["dbo_orders", "dbo_other"],
            target=str(tmp_path / "bronze" / "{ci}"),
            app_id="idle-{ci}",
            checkpoint=str(tmp_path / "chk" / "{ci}"),
            trigger={"processingTime": "0.5 seconds"},
        )
    finally:
        spark.conf.unset("spark.sql.streaming.noDataProgressEventInterval")

    def triggers(since: float, until: float = float("inf")) -> int:
        stamps = [
            dt.datetime.fromisoformat(p.timestamp.replace("Z", "+00:00")).timestamp()
            for q in queries.values()
            for p in q.recentProgress
        ]
        return sum(1 for s in stamps if since <= s < until)

    try:
        for query in queries.values():
            query.processAllAvailable()
        polls0, since = emulator.statement_count(poll_text), time.time()
        deadline = since + 120
        while triggers(since) < 16 and time.time() < deadline:
            time.sleep(0.2)  # progress events are not pushed to Python: look again
        polls, until = emulator.statement_count(poll_text) - polls0, time.time()
        ran = triggers(since, until)
        assert ran >= 16
        assert polls <= 0.75 * ran, (polls, ran)
        assert all(q.isActive for q in queries.values())
    finally:
        stop_all(queries)
        assert await_all(queries, timeout=120) == {}
