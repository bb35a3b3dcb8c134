"""Benchmark: rows per second the emulator serves from a change table of 1 million rows.

Not a test. Fills ``cdc.dbo_bench_CT`` directly in the engine (one committed transaction of
N changes), then reads it through ``cdc.fn_cdc_get_all_changes_dbo_bench`` with python-tds and
prints a table: the server-side time (execute + encode, in process) and the end-to-end time of
a client that decodes every row. Usage: ``python bench/emulator_serve.py [--rows N]``.
"""

from __future__ import annotations

import argparse
import sys
import time

from mssql_cdc.emulator import Emulator
from mssql_cdc.emulator.engine.executor import Executor
from mssql_cdc.emulator.server.render import render

QUERY = (
    "SELECT * FROM cdc.fn_cdc_get_all_changes_dbo_bench(sys.fn_cdc_get_min_lsn('dbo_bench'), "
    "sys.fn_cdc_get_max_lsn(), N'all')"
)


def fill(emu: Emulator, rows: int) -> None:
    ex = Executor(emu.db, 1)
    for sql in (
        "CREATE TABLE dbo.bench (id int NOT NULL PRIMARY KEY, name nvarchar(40), qty int, "
        "price decimal(12,2), at datetime2(7))",
        "EXEC sys.sp_cdc_enable_db",
        "EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N'bench', "
        "@role_name = NULL",
    ):
        outcome = ex.run_batch(sql)
        assert outcome.error is None, outcome.error
    emu.scan()
    commit = emu.db.log.next_lsn()
    emu.scan()
    cur = emu.db.system
    cur.execute(
        'INSERT INTO cdc."dbo_bench_CT" SELECT ?, NULL, '
        "from_hex(lpad(printf('%x', i + 1), 20, '0')), 2, '\\x1F'::BLOB, i::INTEGER, "
        "'name ' || i, (i % 1000)::INTEGER, (i / 100.0)::DECIMAL(12,2), "
        "'2024-01-01 00:00:00.0000000', (i + 1)::INTEGER FROM range(?) t(i)",
        [bytes(commit), rows],
    )
    cur.execute(
        'INSERT INTO cdc."lsn_time_mapping" VALUES (?, ?, ?, ?, ?)',
        [
            bytes(commit),
            "2024-01-01 00:00:00.000",
            "2024-01-01 00:00:00.000",
            b"\x01",
            bytes(commit),
        ],
    )
    ex.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    import pytds

    with Emulator() as emu:
        fill(emu, args.rows)
        ex = Executor(emu.db, 2)
        started = time.perf_counter()
        outcome = ex.run_batch(QUERY)
        executed = time.perf_counter()
        payload = render(outcome)
        encoded = time.perf_counter()
        ex.close()
        assert outcome.error is None, outcome.error
        served = outcome.results[0].rowcount or 0
        conn = pytds.connect(emu.host, port=emu.port, user="sa", password=emu.password)
        cur = conn.cursor()
        begin = time.perf_counter()
        cur.execute(QUERY)
        fetched = 0
        while batch := cur.fetchmany(50_000):
            fetched += len(batch)
        end = time.perf_counter()
        conn.close()
    rows = [
        ("engine query (in process)", served, executed - started),
        ("query + TDS encoding (in process)", served, encoded - started),
        ("end to end, python-tds decoding", fetched, end - begin),
    ]
    print(f"{'measure':<36} {'rows':>10} {'seconds':>9} {'rows/s':>12}")
    for name, count, seconds in rows:
        print(f"{name:<36} {count:>10} {seconds:>9.2f} {count / seconds:>12,.0f}")
    print(f"reply size: {len(payload) / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
