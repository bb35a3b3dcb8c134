"""Benchmark: rows per second the emulator serves per connection, C row encoder versus Python.

Not a test. Fills ``dbo.bench`` (the 12-column change row of ``bench/e2e.py``: the CDC columns
plus id, person_id, store_id, territory_id, account nvarchar(20), rowguid uniqueidentifier,
modified datetime2(3)) directly in the engine, N rows in the source table and N change rows in
``cdc.dbo_bench_CT``, then serves two result sets:

* ``change``: ``SELECT * FROM cdc.fn_cdc_get_all_changes_dbo_bench(min, max, N'all')``;
* ``snapshot``: ``SELECT * FROM dbo.bench``;

each with the C encoder (``encoder=C``) and with the Python encoder it replaced
(``encoder=python``, the same run, on fewer rows because it is slow). Per case it prints the
in-process time (engine query plus TDS encoding) and the end-to-end time of one connection of
the native client reading every row into Arrow: the serving rate a client sees. Wall seconds
and the CPU seconds of the process (server and client share it) are both shown: on a loaded
machine the CPU figure says what one core does.

    .venv/bin/python bench/emulator_rate.py [--rows 1000000] [--python-rows 100000]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from _fill import fill
from mssql_cdc.emulator import Emulator
from mssql_cdc.emulator.engine.executor import Executor
from mssql_cdc.emulator.server import render

CHANGES = (
    "SELECT * FROM cdc.fn_cdc_get_all_changes_dbo_bench(sys.fn_cdc_get_min_lsn('dbo_bench'), "
    "sys.fn_cdc_get_max_lsn(), N'all')"
)
SNAPSHOT = "SELECT * FROM dbo.bench"


@contextmanager
def python_encoder() -> Iterator[None]:
    """Serve with the per-value Python encoder (what the emulator did before the C encoder)."""
    saved = render.encode_rows
    render.encode_rows = lambda columns, rows: None
    try:
        yield
    finally:
        render.encode_rows = saved


def timed(fn: Callable[[], int]) -> tuple[int, float, float]:
    """Rows, wall seconds and CPU seconds of this process (server and client share it)."""
    started, cpu = time.perf_counter(), time.process_time()
    count = fn()
    return count, time.perf_counter() - started, time.process_time() - cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--python-rows", type=int, default=100_000)
    args = parser.parse_args()
    from mssql_cdc import _native

    with Emulator() as emu:
        fill(emu, args.rows)
        text = f"Server=tcp:{emu.host},{emu.port};Encrypt=no"
        table: list[tuple[str, str, int, float, float]] = []
        for encoder, limit in (("C", args.rows), ("python", args.python_rows)):
            top = "" if limit >= args.rows else f"TOP ({limit}) "
            for shape, query in (("change", CHANGES), ("snapshot", SNAPSHOT)):
                sql = query.replace("SELECT ", f"SELECT {top}", 1)

                def in_process(sql: str = sql) -> int:
                    ex = Executor(emu.db, 2)
                    outcome = ex.run_batch(sql)
                    assert outcome.error is None, outcome.error
                    render.render(outcome)
                    ex.close()
                    return outcome.results[0].rowcount or 0

                def end_to_end(sql: str = sql) -> int:
                    with _native.connect(text, user="sa", password=emu.password) as conn:
                        import pyarrow as pa

                        return pa.table(conn.execute(sql)).num_rows

                with python_encoder() if encoder == "python" else _nothing():
                    name = f"{shape}, in process (query + encode)"
                    table.append((name, encoder, *timed(in_process)))
                    name = f"{shape}, one connection, native client"
                    table.append((name, encoder, *timed(end_to_end)))
    head = f"{'measure':<42} {'encoder':>8} {'rows':>10} {'seconds':>8} {'rows/s':>11}"
    print(f"{head} {'cpu s':>7} {'rows/cpu s':>11}")
    for name, encoder, count, seconds, cpu in table:
        line = f"{name:<42} {encoder:>8} {count:>10,} {seconds:>8.2f} {count / seconds:>11,.0f}"
        print(f"{line} {cpu:>7.2f} {count / max(cpu, 1e-9):>11,.0f}")
    return 0


@contextmanager
def _nothing() -> Iterator[None]:
    yield


if __name__ == "__main__":
    sys.exit(main())
