"""The workload generator against CDC-enabled AdventureWorks tables."""

from __future__ import annotations

import json
import threading
from collections import Counter

import pytest

pytds = pytest.importorskip("pytds")

from mssql_cdc.emulator.adventureworks import default_directory, load  # noqa: E402
from mssql_cdc.emulator.engine.database import Database  # noqa: E402
from mssql_cdc.emulator.workload import (  # noqa: E402
    LocalSession,
    TableCounts,
    TdsSession,
    Workload,
    WorkloadConfig,
    main,
    verify_capture,
)

# the packaged data (or $MSSQL_CDC_ADVENTUREWORKS): missing data fails collection, never skips
DATA = default_directory()

TABLES = ["Sales.Customer", "Person.EmailAddress"]
CHANGES = (
    "SELECT __$start_lsn, __$operation FROM cdc.fn_cdc_get_all_changes_{ci}("
    "sys.fn_cdc_get_min_lsn('{ci}'), sys.fn_cdc_get_max_lsn(), N'all') "
    "ORDER BY __$start_lsn, __$seqval, __$operation"
)


@pytest.fixture
def session(emulator):
    emulator.load_adventureworks(DATA, tables=TABLES)
    with TdsSession(emulator.host, emulator.port, password=emulator.password) as s:
        s.execute("EXEC sys.sp_cdc_enable_db")
        for name in TABLES:
            schema, table = name.split(".")
            s.execute(
                f"EXEC sys.sp_cdc_enable_table @source_schema = N'{schema}', "
                f"@source_name = N'{table}', @role_name = NULL"
            )
        yield s


def test_change_tables_hold_exactly_what_the_workload_committed(emulator, session):
    config = WorkloadConfig(
        tables=TABLES,
        seed=11,
        rate=None,
        transactions=80,
        multi_ratio=0.4,
        rollback_ratio=0.25,
        large_every=40,
        large_rows=(100, 300),
    )
    record = Workload(config).run(session)
    kinds = Counter(t.kind for t in record.committed)
    assert len(record.transactions) == 80
    assert kinds["large"] == 2
    assert kinds["multi"] > 0
    assert kinds["single"] > 0
    assert record.rolled_back > 0
    assert all(c.inserted and c.updated and c.deleted for c in record.tables.values())
    emulator.scan()
    for name in TABLES:
        rows = session.query(CHANGES.format(ci=name.replace(".", "_")))
        ops = Counter(op for _, op in rows)
        counts = record.tables[name]
        assert (ops[2], ops[4], ops[1], ops[3]) == (
            counts.inserted,
            counts.updated,
            counts.deleted,
            0,
        )
        per_lsn: dict[bytes, TableCounts] = {}
        for lsn, op in rows:
            c = per_lsn.setdefault(bytes(lsn), TableCounts())
            c.inserted += op == 2
            c.updated += op == 4
            c.deleted += op == 1
        # one commit LSN per committed transaction, holding exactly that transaction's rows
        assert list(per_lsn.values()) == record.expected_transactions(name)
        assert verify_capture(session, record, name) == []
        assert session.query(f"SELECT COUNT(*) FROM {name}") == [(record.final_rows[name],)]


def test_a_seed_gives_the_same_transactions_and_the_same_final_rows():
    def run() -> tuple[dict[str, object], list[tuple[object, ...]]]:
        db = Database()
        try:
            load(db, DATA, tables=["Production.Product"])
            config = WorkloadConfig(
                tables=["Production.Product"],
                seed=5,
                rate=None,
                transactions=40,
                large_every=20,
                large_rows=(50, 100),
            )
            with LocalSession(db) as s:
                record = Workload(config).run(s)
                rows = s.query("SELECT * FROM Production.Product ORDER BY ProductID")
            summary = record.to_dict()
            summary.pop("seconds")
            return summary, rows
        finally:
            db.close()

    first, second = run(), run()
    assert first == second
    assert first[0]["committed"] + first[0]["rolled_back"] == 40  # type: ignore[operator]
    assert len(first[1]) == first[0]["tables"]["Production.Product"]["final_rows"]  # type: ignore[index]


def test_the_time_bound_and_the_stop_event_end_a_paced_run(emulator):
    emulator.load_adventureworks(DATA, tables=["Sales.CurrencyRate"])
    config = WorkloadConfig(tables=["Sales.CurrencyRate"], rate=40, seconds=0.5, large_every=None)
    with LocalSession(emulator) as s:
        record = Workload(config).run(s)
        assert 1 <= len(record.transactions) <= 21
        assert record.seconds < 2
        stop = threading.Event()
        stop.set()
        stopped = Workload(WorkloadConfig(tables=["Sales.CurrencyRate"], rate=1, seconds=60))
        assert stopped.run(s, stop).transactions == []


def test_command_line_runs_over_tds_and_prints_the_record(emulator, capsys, tmp_path):
    emulator.load_adventureworks(DATA, tables=["Production.Product"])
    record_file = tmp_path / "record.json"
    code = main(
        [
            "--server",
            f"{emulator.host},{emulator.port}",
            "--password",
            emulator.password,
            "--tables",
            "Production.Product",
            "--rate",
            "0",
            "--transactions",
            "25",
            "--seed",
            "3",
            "--large-every",
            "10",
            "--large-rows",
            "100-200",
            "--data",
            str(DATA),
            "--record",
            str(record_file),
        ]
    )
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["transactions"] == 25
    assert summary["large"] == 2
    table = summary["tables"]["Production.Product"]
    assert table["initial_rows"] == 504
    assert table["final_rows"] == 504 + table["inserted"] - table["deleted"]
    with LocalSession(emulator) as s:
        assert s.query("SELECT COUNT(*) FROM Production.Product") == [(table["final_rows"],)]
    assert len(json.loads(record_file.read_text())["transaction_log"]) == 25


def test_command_line_requires_a_bound(capsys):
    with pytest.raises(SystemExit):
        main(["--server", "127.0.0.1,1", "--tables", "Sales.Customer"])
    assert "--seconds or --transactions" in capsys.readouterr().err
